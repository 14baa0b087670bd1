import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);

describe('packaging', () => {
    it('puts only the runtime files into the .vsix (vsce ls)', async (t) => {
        if (!existsSync('out/extension.js')) {
            t.skip('run `npm run compile` first');
            return;
        }
        const { stdout } = await run(process.execPath, ['node_modules/@vscode/vsce/vsce', 'ls'], { timeout: 60_000 });
        const files = stdout
            .split('\n')
            .map((line) => line.trim())
            .filter((line) => line !== '')
            .sort();
        assert.deepEqual(files, ['LICENSE', 'README.md', 'out/extension.js', 'package.json']);
    });
});
