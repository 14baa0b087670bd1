import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import type * as vscode from 'vscode';
import manifest from '../package.json';
import { MCP_PROVIDER_ID } from '../src/common/constants';
import { affectsMcp, cachedCheck, mcpApi, mcpCommand, registerMcpServers, type McpApi, type McpProvider, type McpStdioDefinition } from '../src/common/mcp';
import { CLIENT_ONLY_SETTINGS } from '../src/common/settings';
import { moduleCommand } from '../src/common/python';
import { isMemoryWorkspace } from '../src/common/workspace';
import { EventEmitter, Uri, stub, vsUri } from './stubs/vscode';

class FakeDefinition implements McpStdioDefinition {
    cwd?: vscode.Uri;
    constructor(
        readonly label: string,
        readonly command: string,
        readonly args: string[] = [],
        readonly env: Record<string, string | number | null> = {},
        readonly version?: string,
    ) {}
}

function fakeApi(): McpApi & { registered: Map<string, McpProvider>; disposed: string[] } {
    const registered = new Map<string, McpProvider>();
    const disposed: string[] = [];
    return {
        registered,
        disposed,
        McpStdioServerDefinition: FakeDefinition,
        registerMcpServerDefinitionProvider(id, provider) {
            registered.set(id, provider);
            return {
                dispose: () => {
                    disposed.push(id);
                },
            };
        },
    };
}

function folder(path: string, name: string): vscode.WorkspaceFolder {
    return { uri: vsUri(Uri.file(path)), name, index: 0 };
}

describe('MCP server for agent mode', () => {
    beforeEach(() => stub.reset());

    it('contributes the provider id it registers and a client-only memsearch.mcp.enable (default on)', () => {
        assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders, [{ id: MCP_PROVIDER_ID, label: 'Memsearch memory' }]);
        const setting = manifest.contributes.configuration.flatMap((block) => Object.entries(block.properties)).find(([key]) => key === 'memsearch.mcp.enable');
        assert.ok(setting, 'memsearch.mcp.enable is contributed');
        assert.deepEqual([(setting[1] as { type: string }).type, (setting[1] as { default: unknown }).default], ['boolean', true]);
        assert.ok(CLIENT_ONLY_SETTINGS.has('mcp.enable'), 'never sent to the server');
    });

    it('runs the language server\'s Python with `-m memsearch_lsp mcp --workspace <folder>`', () => {
        const module = moduleCommand(['python3'], []).args; // -E -c "...runpy.run_module('memsearch_lsp'...)" (python.test.ts)
        assert.deepEqual(mcpCommand(['/venv/bin/python'], '/ws'), { command: '/venv/bin/python', args: [...module, 'mcp', '--workspace', '/ws'] });
        assert.deepEqual(mcpCommand(['py', '-3'], '/ws'), { command: 'py', args: ['-3', ...module, 'mcp', '--workspace', '/ws'] });
    });

    it('offers one stdio server per enabled folder, with the interpreter it is given', async () => {
        const api = fakeApi();
        const emitter = new EventEmitter<void>();
        const folders = [folder('/work/a', 'a'), folder('/work/b', 'b')];
        const asked: string[] = [];
        const disposables = registerMcpServers(api, {
            folders: () => folders,
            enabled: (f) => f.name !== 'b',
            isMemoryWorkspace: () => true,
            interpreter: async (f) => {
                asked.push(f.name);
                return ['/venv/bin/python'];
            },
            hasMcp: async () => true,
            version: '0.1.0',
        }, emitter);
        const provider = api.registered.get(MCP_PROVIDER_ID);
        assert.ok(provider, 'registered under the contributed id');
        const servers = await provider.provideMcpServerDefinitions();
        assert.equal(servers.length, 1);
        const server = servers[0];
        assert.ok(server);
        assert.equal(server.label, 'Memsearch memory (a)');
        assert.equal(server.command, '/venv/bin/python');
        assert.deepEqual(server.args, [...moduleCommand(['python3'], []).args, 'mcp', '--workspace', Uri.file('/work/a').fsPath]);
        assert.deepEqual([server.env, server.version, server.cwd?.fsPath], [{ PYTHONUTF8: '1', PYTHONUSERBASE: '' }, '0.1.0', Uri.file('/work/a').fsPath]);
        assert.deepEqual(asked, ['a']);

        let changes = 0;
        provider.onDidChangeMcpServerDefinitions(() => changes++);
        emitter.fire();
        assert.equal(changes, 1);
        for (const disposable of disposables) {
            disposable.dispose();
        }
        assert.deepEqual(api.disposed, [MCP_PROVIDER_ID]);
    });

    it('does nothing on a VS Code without the MCP API', () => {
        assert.equal(mcpApi({}), undefined);
        assert.equal(mcpApi({ lm: {} }), undefined);
        const emitter = new EventEmitter<void>();
        assert.deepEqual(registerMcpServers(undefined, { folders: () => [], enabled: () => true, isMemoryWorkspace: () => true, interpreter: async () => [], hasMcp: async () => true, version: '' }, emitter), []);
        const calls: unknown[] = [];
        const host = { lm: { registerMcpServerDefinitionProvider(this: unknown, ...args: unknown[]) { calls.push(this, ...args); return { dispose() {} }; } }, McpStdioServerDefinition: FakeDefinition };
        const api = mcpApi(host);
        assert.ok(api);
        api.registerMcpServerDefinitionProvider('x', {} as McpProvider);
        assert.equal(calls[0], host.lm, 'called on vscode.lm');
    });

    it('asks VS Code again when memsearch.mcp.enable or the interpreter change', () => {
        const changed = (keys: string[]) => ({ affectsConfiguration: (section: string) => keys.includes(section) });
        assert.ok(affectsMcp(changed(['memsearch.mcp.enable'])));
        assert.ok(affectsMcp(changed(['memsearch.interpreter'])));
        assert.ok(affectsMcp(changed(['memsearch.memory.paths'])));
        assert.ok(!affectsMcp(changed(['memsearch.search.topK'])));
    });

    it('offers a server only for memory workspaces, and only when the Python can import mcp', async () => {
        const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'memsearch-mcp-'));
        try {
            for (const name of ['memory', 'toml', 'plain', 'custom']) {
                await fs.mkdir(path.join(tmp, name));
            }
            await fs.mkdir(path.join(tmp, 'memory', 'memory'));
            await fs.writeFile(path.join(tmp, 'toml', '.memsearch.toml'), '');
            await fs.mkdir(path.join(tmp, 'custom', 'notes'));
            await fs.writeFile(path.join(tmp, 'plain', 'memory'), 'a file, not a folder');
            assert.deepEqual(
                ['memory', 'toml', 'plain', 'custom'].map((name) => isMemoryWorkspace(path.join(tmp, name), ['memory'])),
                [true, true, false, false],
            );
            assert.ok(isMemoryWorkspace(path.join(tmp, 'custom'), ['notes']), 'memory.paths counts');

            const api = fakeApi();
            const folders = ['memory', 'toml', 'plain'].map((name) => folder(path.join(tmp, name), name));
            let python: string[] | undefined = ['/venv/bin/python'];
            let mcpImportable = false;
            const checked: string[][] = [];
            registerMcpServers(api, {
                folders: () => folders,
                enabled: () => true,
                isMemoryWorkspace: (f) => isMemoryWorkspace(f.uri.fsPath, ['memory']),
                interpreter: async () => python,
                hasMcp: async (p) => {
                    checked.push([...p]);
                    return mcpImportable;
                },
                version: '0.1.0',
            }, new EventEmitter<void>());
            const provider = api.registered.get(MCP_PROVIDER_ID);
            assert.ok(provider);
            assert.deepEqual(await provider.provideMcpServerDefinitions(), [], 'no mcp extra: no server');
            assert.deepEqual(checked, [['/venv/bin/python'], ['/venv/bin/python']], 'asked for the memory folders only');
            mcpImportable = true;
            const labels = (await provider.provideMcpServerDefinitions()).map((d) => d.label);
            assert.deepEqual(labels, ['Memsearch memory (memory)', 'Memsearch memory (toml)']);
            python = undefined;
            assert.deepEqual(await provider.provideMcpServerDefinitions(), [], 'no server Python: no server');
        } finally {
            await fs.rm(tmp, { recursive: true, force: true });
        }
    });

    it('asks a Python once whether it has mcp, until cleared', async () => {
        let calls = 0;
        const check = cachedCheck(async (p) => {
            calls++;
            return p[0] === '/has/mcp';
        });
        assert.deepEqual([await check(['/has/mcp']), await check(['/has/mcp']), await check(['/no/mcp'])], [true, true, false]);
        assert.equal(calls, 2);
        check.clear();
        await check(['/has/mcp']);
        assert.equal(calls, 3);
    });
});
