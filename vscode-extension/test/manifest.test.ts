import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import manifest from '../package.json';
import { Commands, ServerCommands } from '../src/common/constants';

interface Schema {
    type?: string | string[];
    default?: unknown;
    enum?: unknown[];
    items?: { type?: string };
    minimum?: number;
    maximum?: number;
    description?: string;
    markdownDescription?: string;
}

const properties: [string, Schema][] = manifest.contributes.configuration.flatMap((block) => Object.entries(block.properties as unknown as Record<string, Schema>));

function typeOf(value: unknown): string {
    if (Array.isArray(value)) {
        return 'array';
    }
    if (typeof value === 'number') {
        return Number.isInteger(value) ? 'integer' : 'number';
    }
    return typeof value;
}

describe('package.json', () => {
    it('activates only where there is memory (memory/**/*.md, .memsearch.toml) and on its commands', () => {
        const commands = Object.values(Commands).map((id) => `onCommand:${id}`);
        assert.deepEqual(
            [...manifest.activationEvents].sort(),
            ['workspaceContains:.memsearch.toml', 'workspaceContains:memory/**/*.md', ...commands].sort(),
        );
        assert.ok(!manifest.activationEvents.some((e) => e.startsWith('onLanguage:') || e === '*' || e === 'onStartupFinished'));
    });

    it('packages the bundle, the server wheel, the walkthrough, README and LICENSE only', () => {
        assert.equal(manifest.main, './out/extension.js');
        assert.deepEqual(manifest.files, ['out/extension.js', 'server/*.whl', 'walkthrough/*.md', 'README.md', 'LICENSE']);
        assert.equal(manifest.scripts['vscode:prepublish'], 'npm run compile && npm run build-wheel', 'vsce package builds the wheel');
        assert.ok(existsSync('README.md'));
        assert.match(readFileSync('LICENSE', 'utf8'), /MIT License/);
        assert.ok(!existsSync('.vscodeignore'), 'vsce refuses .vscodeignore together with "files"');
    });

    it('has what vsce needs to package without prompts', () => {
        assert.ok(manifest.publisher);
        assert.equal(manifest.license, 'MIT');
        assert.match(manifest.repository.url, /^https:\/\//);
        const engine = manifest.engines.vscode.replace(/^\^/, '');
        const types = manifest.devDependencies['@types/vscode'].replace(/^[~^]/, '');
        assert.equal(types, engine, '@types/vscode must not be newer than engines.vscode');
        assert.ok(!('vscode' in manifest.dependencies));
    });

    it('contributes the client commands, none in the server namespace', () => {
        const ids = manifest.contributes.commands.map((c) => c.command);
        assert.deepEqual(ids.sort(), Object.values(Commands).sort());
        for (const id of ids) {
            assert.ok(!(Object.values(ServerCommands) as string[]).includes(id), id);
        }
        for (const command of manifest.contributes.commands) {
            assert.equal(command.category, 'Memsearch');
        }
    });

    it('describes every setting with a type and a default of that type', () => {
        assert.ok(properties.length > 30);
        for (const [key, schema] of properties) {
            assert.match(key, /^memsearch\./);
            assert.ok(schema.description ?? schema.markdownDescription, `${key}: description`);
            assert.ok('default' in schema, `${key}: default`);
            const actual = typeOf(schema.default);
            const allowed = schema.type === 'number' ? ['number', 'integer'] : [schema.type];
            assert.ok(allowed.includes(actual), `${key}: default ${JSON.stringify(schema.default)} is not ${String(schema.type)}`);
            if (schema.enum) {
                assert.ok(schema.enum.includes(schema.default), `${key}: default not in enum`);
            }
            if (schema.type === 'array') {
                assert.equal(schema.items?.type, 'string', `${key}: string items`);
            }
            if (typeof schema.default === 'number') {
                assert.ok(schema.minimum === undefined || schema.default >= schema.minimum, `${key}: below minimum`);
                assert.ok(schema.maximum === undefined || schema.default <= schema.maximum, `${key}: above maximum`);
            }
        }
    });
});
