import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import manifest from '../package.json';
import {
    CLIENT_ONLY_SETTINGS,
    SERVER_SETTING_KEYS,
    USER_ONLY_SETTINGS,
    PROVIDER_BOUND_SETTINGS,
    WORKSPACE_PATH_SETTINGS,
    configurationAnswers,
    contributedSettingKeys,
    explicitValue,
    getInterpreterSetting,
    getMemoryPaths,
    getServerSettings,
    insideFolder,
    interpreterFromSetting,
    memoryGlobs,
    needsRestart,
    nestSettings,
    ownSettingsPath,
    resolveVariables,
    serverSettings,
    settingsAt,
    type ConfigurationReader,
    type SettingInspection,
} from '../src/common/settings';
import { Uri, stub, vsUri } from './stubs/vscode';

function reader(values: Record<string, SettingInspection>): ConfigurationReader {
    return { inspect: (key) => values[key] };
}

describe('settings schema', () => {
    it('reads every memsearch.* key of package.json, with or without categories', () => {
        const keys = contributedSettingKeys(manifest);
        assert.ok(keys.includes('interpreter'));
        assert.ok(keys.includes('search.vectorWeight'));
        assert.ok(keys.includes('showNotifications'));
        assert.equal(new Set(keys).size, keys.length, 'no key twice');
        const single = { contributes: { configuration: { properties: { 'memsearch.a.b': {}, 'other.c': {} } } } };
        assert.deepEqual(contributedSettingKeys(single), ['a.b']);
        assert.deepEqual(contributedSettingKeys({}), []);
    });

    it('sends server keys only: not interpreter, not trace.server', () => {
        assert.ok(SERVER_SETTING_KEYS.length >= 30);
        for (const key of CLIENT_ONLY_SETTINGS) {
            assert.ok(!SERVER_SETTING_KEYS.includes(key), key);
        }
        for (const key of ['memory.paths', 'milvus.uri', 'milvus.token', 'embedding.model', 'search.topK', 'watch.debounceMs', 'compact.olderThanDays', 'showNotifications']) {
            assert.ok(SERVER_SETTING_KEYS.includes(key), key);
        }
    });
});

describe('settings mapping', () => {
    beforeEach(() => stub.reset());

    it('prefers folder over workspace over user values, and ignores defaults', () => {
        const r = reader({
            a: { globalValue: 1, workspaceValue: 2, workspaceFolderValue: 3 },
            b: { globalValue: 1, workspaceValue: 2 },
            c: { globalValue: false },
            d: {},
        });
        assert.equal(explicitValue(r, 'a'), 3);
        assert.equal(explicitValue(r, 'b'), 2);
        assert.equal(explicitValue(r, 'c'), false);
        assert.equal(explicitValue(r, 'd'), undefined);
        assert.equal(explicitValue(r, 'missing'), undefined);
    });

    it('nests dotted keys', () => {
        assert.deepEqual(
            nestSettings([
                ['search.vectorWeight', 0.5],
                ['search.topK', 5],
                ['memory.paths', ['memory', 'notes']],
                ['showNotifications', false],
            ]),
            { search: { vectorWeight: 0.5, topK: 5 }, memory: { paths: ['memory', 'notes'] }, showNotifications: false },
        );
        assert.deepEqual(nestSettings([]), {});
    });

    it('builds the nested server settings from the set values only', () => {
        const r = reader({
            'search.vectorWeight': { globalValue: 0.5 },
            showNotifications: { workspaceValue: false },
            interpreter: { globalValue: ['/usr/bin/python3'] },
            'milvus.uri': {},
        });
        assert.deepEqual(serverSettings(r), { search: { vectorWeight: 0.5 }, showNotifications: false });
    });

    it('reads VS Code settings through workspace.getConfiguration', () => {
        assert.deepEqual(getServerSettings(), {}, 'defaults alone send nothing');
        stub.set('memsearch.search.topK', 7);
        stub.set('memsearch.search.ranker', 'rrf', 'workspaceValue');
        stub.set('memsearch.milvus.collection', 'team');
        stub.set('memsearch.milvus.uri', 'http://localhost:19530');
        stub.set('memsearch.interpreter', ['/venv/bin/python']);
        stub.set('memsearch.trace.server', 'verbose');
        assert.deepEqual(getServerSettings(), {
            search: { topK: 7, ranker: 'rrf' },
            milvus: { collection: 'team', uri: 'http://localhost:19530' },
        });
    });

    it("never sends a workspace's value of a setting that sends the memory or a key somewhere", () => {
        // a cloned repository's .vscode/settings.json, on a VS Code that applies it whatever the scope
        stub.set('memsearch.compact.summarizer', 'openai', 'workspaceValue');
        stub.set('memsearch.compact.baseUrl', 'http://attacker.example/v1', 'workspaceFolderValue');
        stub.set('memsearch.compact.apiKeyEnv', 'AWS_SECRET_ACCESS_KEY', 'workspaceValue');
        stub.set('memsearch.embedding.provider', 'openai', 'workspaceValue');
        stub.set('memsearch.milvus.uri', 'http://attacker.example:19530', 'workspaceValue');
        stub.set('memsearch.milvus.token', 'root:Milvus', 'workspaceFolderValue');
        stub.set('memsearch.milvus.collection', 'customers', 'workspaceValue'); // another application's, on the user's server
        stub.set('memsearch.search.topK', 4, 'workspaceValue');
        assert.deepEqual(getServerSettings(), { search: { topK: 4 } });
        // the user's own values go out, and a workspace value never overrides them
        stub.set('memsearch.compact.baseUrl', 'http://127.0.0.1:11434/v1');
        const r = reader({ 'compact.baseUrl': { globalValue: 'http://127.0.0.1:11434/v1', workspaceValue: 'http://attacker.example/v1' } });
        assert.equal(explicitValue(r, 'compact.baseUrl'), 'http://127.0.0.1:11434/v1');
        assert.deepEqual(getServerSettings(), { search: { topK: 4 }, compact: { baseUrl: 'http://127.0.0.1:11434/v1' } });
    });

    it("sends a workspace's model only for a local provider: else the user's own (trust.PROVIDER_BOUND_KEYS)", () => {
        const own = { 'embedding.model': { globalValue: 'text-embedding-3-small', workspaceValue: 'text-embedding-3-large' },
            'embedding.dimensions': { workspaceValue: 3072 } };
        for (const provider of ['openai', 'fastembed']) {
            const r = reader({ ...own, 'embedding.provider': { globalValue: provider } });
            assert.equal(explicitValue(r, 'embedding.model', [os.tmpdir()]), 'text-embedding-3-small', provider);
            assert.equal(explicitValue(r, 'embedding.dimensions'), undefined, provider);
        }
        for (const provider of [undefined, 'bundled', 'onnx']) {
            const r = reader({ ...own, 'embedding.provider': { globalValue: provider } });
            assert.equal(explicitValue(r, 'embedding.model', [os.tmpdir()]), 'text-embedding-3-large', String(provider));
        }
        assert.deepEqual([...PROVIDER_BOUND_SETTINGS].sort(), ['embedding.dimensions', 'embedding.model', 'embedding.queryModel']);
    });

    it('declares those settings machine-scoped (user settings only) in package.json', () => {
        const blocks = manifest.contributes.configuration as unknown as { properties: Record<string, { scope?: string }> }[];
        const scopes = new Map(blocks.flatMap((b) => Object.entries(b.properties)));
        for (const key of USER_ONLY_SETTINGS) {
            assert.equal(scopes.get(`memsearch.${key}`)?.scope, 'machine', key);
        }
    });

    it('answers workspace/configuration items of our section', () => {
        assert.equal(ownSettingsPath('memsearch'), '');
        assert.equal(ownSettingsPath('memsearch.search'), 'search');
        assert.equal(ownSettingsPath('memsearchx'), undefined);
        assert.equal(ownSettingsPath('files.exclude'), undefined);
        assert.equal(ownSettingsPath(null), undefined);
        const settings = { search: { topK: 5 }, showNotifications: false };
        assert.deepEqual(settingsAt(settings, ''), settings);
        assert.deepEqual(settingsAt(settings, 'search'), { topK: 5 });
        assert.equal(settingsAt(settings, 'search.topK'), 5);
        assert.equal(settingsAt(settings, 'showNotifications'), false);
        assert.deepEqual(settingsAt(settings, 'milvus'), {}, 'an unset group is empty');
        assert.equal(settingsAt(settings, 'milvus.uri'), null, 'an unset key is null');
        assert.equal(settingsAt({}, 'showNotifications'), null);
    });
});

describe('workspace/configuration in a multi-root workspace', () => {
    const made: string[] = [];
    beforeEach(() => stub.reset());
    afterEach(() => {
        for (const dir of made.splice(0)) {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("answers a folder's items with that folder's settings, the user's own for user-only keys (audit Y1)", () => {
        const one = fs.mkdtempSync(path.join(os.tmpdir(), 'memsearch-one-'));
        const two = fs.mkdtempSync(path.join(os.tmpdir(), 'memsearch-two-'));
        made.push(one, two);
        stub.workspaceFolders = [
            { uri: Uri.file(one), name: 'one', index: 0 },
            { uri: Uri.file(two), name: 'two', index: 1 },
        ];
        stub.set('memsearch.search.topK', 4);
        stub.set('memsearch.milvus.uri', 'http://localhost:19530');
        // the second folder's .vscode/settings.json: its memory is notes/, and it names a Milvus server of its own
        stub.setForFolder(Uri.file(two), 'memsearch.memory.paths', ['notes']);
        stub.setForFolder(Uri.file(two), 'memsearch.compact.olderThanDays', 3);
        stub.setForFolder(Uri.file(two), 'memsearch.milvus.uri', 'http://attacker.example:19530');
        const user = { search: { topK: 4 }, milvus: { uri: 'http://localhost:19530' } };
        const items = [
            { section: 'memsearch' },
            { section: 'memsearch', scopeUri: Uri.file(one).toString() },
            { section: 'memsearch', scopeUri: Uri.file(two).toString() },
            { section: 'memsearch.memory', scopeUri: Uri.file(two).toString() },
            { section: 'files.exclude', scopeUri: Uri.file(two).toString() },
        ];
        assert.deepEqual(configurationAnswers(items, [null, null, null, null, { '**/.git': true }]), [
            user,
            user,
            { ...user, memory: { paths: ['notes'] }, compact: { olderThanDays: 3 } },
            { paths: ['notes'] },
            { '**/.git': true },
        ]);
        assert.deepEqual(getMemoryPaths(vsUri(Uri.file(path.join(two, 'notes', 'a.md')))), ['notes'], 'what its watchers use');
    });
});

describe("a workspace's path settings", () => {
    let ws = '';
    beforeEach(() => {
        stub.reset();
        ws = fs.mkdtempSync(path.join(os.tmpdir(), 'memsearch-ws-'));
        fs.mkdirSync(path.join(ws, 'prompts'));
        fs.writeFileSync(path.join(ws, 'prompts', 'p.md'), 'Summarise.');
        fs.symlinkSync('/etc', path.join(ws, 'prompts', 'etc'));
        fs.symlinkSync(path.join(os.tmpdir(), 'memsearch-nowhere', 'x.md'), path.join(ws, 'prompts', 'later.md'));
    });
    afterEach(() => {
        for (const dir of [ws, ...made.splice(0)]) {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
    const made: string[] = [];

    it('are those of trust.WORKSPACE_PATH_KEYS', () => {
        assert.deepEqual([...WORKSPACE_PATH_SETTINGS].sort(), ['compact.promptFile', 'embedding.model']);
    });

    it('name a place inside the folder only when it is there once links are followed', () => {
        for (const inside of ['prompts/p.md', path.join(ws, 'prompts', 'p.md'), 'prompts/new.md', 'multilingual-e5-small', 'sentence-transformers/all-MiniLM-L6-v2', '']) {
            assert.ok(insideFolder(inside, ws), inside);
        }
        for (const outside of ['/etc/hostname', '~/.ssh/id_rsa', '../other/p.md', 'prompts/../../x.md', 'prompts/etc/hostname', 'prompts/etc', 'prompts/later.md']) {
            assert.ok(!insideFolder(outside, ws), outside);
        }
    });

    it("are sent from a workspace only when inside every folder; else the user's value is", () => {
        stub.workspaceFolders = [{ uri: Uri.file(ws), name: 'ws', index: 0 }];
        // a cloned repository's .vscode/settings.json: the user's summariser would send the prompt file's text
        stub.set('memsearch.compact.promptFile', '/home/me/.aws/credentials', 'workspaceValue');
        stub.set('memsearch.embedding.model', 'prompts/etc', 'workspaceFolderValue');
        stub.set('memsearch.search.topK', 4, 'workspaceValue');
        assert.deepEqual(getServerSettings(), { search: { topK: 4 } });
        stub.set('memsearch.embedding.model', '/opt/models/mine'); // the user's own: anywhere
        stub.set('memsearch.compact.promptFile', 'prompts/p.md', 'workspaceValue');
        assert.deepEqual(getServerSettings(), {
            search: { topK: 4 },
            compact: { promptFile: 'prompts/p.md' },
            embedding: { model: '/opt/models/mine' },
        });
        const absolute = path.join(ws, 'prompts', 'p.md');
        stub.set('memsearch.compact.promptFile', absolute, 'workspaceValue');
        assert.deepEqual(getServerSettings().compact, { promptFile: absolute });
        const other = fs.mkdtempSync(path.join(os.tmpdir(), 'memsearch-other-'));
        made.push(other);
        stub.workspaceFolders.push({ uri: Uri.file(other), name: 'other', index: 1 });
        assert.deepEqual(getServerSettings().compact, undefined, 'the first folder\'s file is outside the second');
        stub.set('memsearch.compact.promptFile', 'prompts/p.md', 'workspaceValue');
        assert.deepEqual(getServerSettings().compact, { promptFile: 'prompts/p.md' }, "each folder's own");
        stub.workspaceFolders = undefined;
        assert.deepEqual(getServerSettings().compact, undefined, 'no folder: no workspace path');
    });
});

describe('client-only settings', () => {
    beforeEach(() => stub.reset());

    it('expands variables in memsearch.interpreter', () => {
        const vars = { workspaceFolder: '/ws', userHome: '/home/me', env: { VENV: '/opt/venv' } };
        assert.deepEqual(resolveVariables(['${workspaceFolder}/.venv/bin/python', '~/py', '${env:VENV}/bin/python', '${userHome}/x', '${env:NOPE}'], vars), [
            '/ws/.venv/bin/python',
            '/home/me/py',
            '/opt/venv/bin/python',
            '/home/me/x',
            '',
        ]);
        assert.deepEqual(resolveVariables(['${workspaceFolder}/p'], { userHome: '/h', env: {} }), ['${workspaceFolder}/p']);
    });

    it('accepts an array or a string as interpreter; empty means unset', () => {
        const vars = { userHome: '/h', env: {} };
        assert.deepEqual(interpreterFromSetting(['py', '-3'], vars), ['py', '-3']);
        assert.deepEqual(interpreterFromSetting('/usr/bin/python3', vars), ['/usr/bin/python3']);
        assert.deepEqual(interpreterFromSetting([], vars), []);
        assert.deepEqual(interpreterFromSetting(['', '  '], vars), []);
        assert.deepEqual(interpreterFromSetting(undefined, vars), []);
        assert.deepEqual(interpreterFromSetting(42, vars), []);
    });

    it('reads memsearch.interpreter with the workspace folder', () => {
        stub.workspaceFolders = [{ uri: Uri.file('/ws'), name: 'ws', index: 0 }];
        assert.deepEqual(getInterpreterSetting(), []);
        stub.set('memsearch.interpreter', ['${workspaceFolder}/.venv/bin/python']);
        assert.deepEqual(getInterpreterSetting(), [`${Uri.file('/ws').fsPath}/.venv/bin/python`]);
    });

    it('reads memory.paths with its default', () => {
        assert.deepEqual(getMemoryPaths(), ['memory']);
        stub.set('memsearch.memory.paths', ['notes', 'memory']);
        assert.deepEqual(getMemoryPaths(), ['notes', 'memory']);
        stub.set('memsearch.memory.paths', []);
        assert.deepEqual(getMemoryPaths(), ['memory']);
    });

    it('restarts the server for a new interpreter or new memory folders only', () => {
        const event = (changed: string) => ({ affectsConfiguration: (section: string) => changed.startsWith(section) });
        assert.equal(needsRestart(event('memsearch.interpreter')), true);
        assert.equal(needsRestart(event('memsearch.memory.paths')), true);
        assert.equal(needsRestart(event('memsearch.search.topK')), false);
        assert.equal(needsRestart(event('editor.fontSize')), false);
    });

    it('watches the Markdown files of each memory path', () => {
        assert.deepEqual(memoryGlobs(['memory', './notes/', 'a\\b', '.', '/abs/mem']), [
            { pattern: 'memory/**/*.md' },
            { pattern: 'notes/**/*.md' },
            { pattern: 'a/b/**/*.md' },
            { pattern: '**/*.md' },
            { base: '/abs/mem', pattern: '**/*.md' },
        ]);
    });
});
