import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);

describe('packaging', () => {
    it('puts only the runtime files, the server wheel and the walkthrough into the .vsix (vsce ls)', async (t) => {
        if (!existsSync('out/extension.js') || !existsSync('server')) {
            t.skip('run `npm run compile` and `npm run build-wheel` first');
            return;
        }
        const { stdout } = await run(process.execPath, ['node_modules/@vscode/vsce/vsce', 'ls'], { timeout: 60_000 });
        const files = stdout
            .split('\n')
            .map((line) => line.trim())
            .filter((line) => line !== '')
            .sort();
        const wheels = readdirSync('server').filter((name) => /^memsearch_lsp-.+-py3-none-any\.whl$/.test(name));
        assert.equal(wheels.length, 1, `one wheel in server/: ${wheels.join(', ')}`);
        const walkthrough = readdirSync('walkthrough').map((name) => `walkthrough/${name}`);
        assert.deepEqual(files, ['LICENSE', 'README.md', 'out/extension.js', 'package.json', `server/${wheels[0] ?? ''}`, ...walkthrough].sort());
    });
});
