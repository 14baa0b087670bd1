import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import manifest from '../package.json';
import {
    COMPACT_CONFIRM,
    compact,
    dailyLogUri,
    ensureDailyLog,
    formatReindex,
    formatStatus,
    INIT_MEMORY,
    localDate,
    noMemoryText,
    openTodayLog,
    registerCommands,
    reindex,
    searchMemory,
    showStatus,
    type ServerControl,
} from '../src/common/commands';
import { Commands, ServerCommands } from '../src/common/constants';
import { registerSetupCommands } from '../src/common/setup';
import { IndexStatus } from '../src/common/status';
import { Uri, commands, stub, vsUri, window } from './stubs/vscode';

class FakeServer implements ServerControl {
    isRunning = true;
    restarts = 0;
    readonly requests: { method: string; params: unknown }[] = [];
    readonly commands: { command: string; args: readonly unknown[] }[] = [];
    /** A command's answer; an array answers its calls in turn (a dry run, then the apply). */
    constructor(private readonly results: Record<string, unknown> = {}) {}
    async request(method: string, params: unknown): Promise<unknown> {
        this.requests.push({ method, params });
        return [];
    }
    async executeCommand(command: string, args: readonly unknown[]): Promise<unknown> {
        this.commands.push({ command, args });
        const result = this.results[command];
        return Array.isArray(result) ? result.shift() : result;
    }
    async restart(): Promise<void> {
        this.restarts += 1;
    }
    describe(): string[] {
        return ['python: python3 (from path)'];
    }
}

describe("today's log", () => {
    let dir: string;
    beforeEach(async () => {
        stub.reset();
        dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memsearch-vscode-'));
    });
    afterEach(async () => {
        await fs.rm(dir, { recursive: true, force: true });
    });

    it('names the file after the local date', () => {
        assert.equal(localDate(new Date(2026, 1, 9, 23, 59)), '2026-02-09');
        assert.equal(localDate(new Date(2026, 11, 2, 0, 0)), '2026-12-02');
    });

    it('puts it in the memory folder', () => {
        const folder = Uri.file('/ws');
        assert.equal(dailyLogUri(vsUri(folder), 'memory', '2026-12-02').path, `${folder.path}/memory/2026-12-02.md`);
        assert.equal(dailyLogUri(vsUri(folder), './notes/daily/', '2026-12-02').path, `${folder.path}/notes/daily/2026-12-02.md`);
        assert.equal(dailyLogUri(vsUri(folder), '/abs/mem', '2026-12-02').fsPath, path.join('/abs/mem', '2026-12-02.md'));
    });

    it('creates it with its heading when missing, and leaves an existing one alone', async () => {
        const uri = Uri.file(path.join(dir, 'memory', '2026-12-02.md'));
        assert.equal(await ensureDailyLog(vsUri(uri), '2026-12-02'), true);
        assert.equal(await fs.readFile(uri.fsPath, 'utf8'), '# 2026-12-02\n\n');
        await fs.writeFile(uri.fsPath, '# 2026-12-02\n\n- kept\n');
        assert.equal(await ensureDailyLog(vsUri(uri), '2026-12-02'), false);
        assert.equal(await fs.readFile(uri.fsPath, 'utf8'), '# 2026-12-02\n\n- kept\n');
    });

    it('opens memory/YYYY-MM-DD.md of the first workspace folder', async () => {
        stub.workspaceFolders = [{ uri: Uri.file(dir), name: 'ws', index: 0 }];
        await fs.mkdir(path.join(dir, 'memory'));
        const now = new Date(2026, 11, 2, 10, 0);
        const uri = await openTodayLog(now);
        const file = path.join(dir, 'memory', '2026-12-02.md');
        assert.equal(uri?.fsPath, file);
        assert.equal(await fs.readFile(file, 'utf8'), '# 2026-12-02\n\n');
        assert.equal(stub.shown[0]?.uri.fsPath, file);
    });

    it('uses the first memsearch.memory.paths entry', async () => {
        stub.workspaceFolders = [{ uri: Uri.file(dir), name: 'ws', index: 0 }];
        stub.set('memsearch.memory.paths', ['notes/memory']);
        await fs.mkdir(path.join(dir, 'notes', 'memory'), { recursive: true });
        const uri = await openTodayLog(new Date(2026, 0, 5));
        assert.equal(uri?.fsPath, path.join(dir, 'notes', 'memory', '2026-01-05.md'));
    });

    it("with no server, refuses a folder that has no memory as the server does: offers Initialize, creates nothing", async () => {
        stub.workspaceFolders = [{ uri: Uri.file(dir), name: 'ws', index: 0 }];
        const server = new FakeServer();
        server.isRunning = false;
        stub.answers = [INIT_MEMORY];
        assert.equal(await openTodayLog(new Date(2026, 11, 2), server), undefined);
        assert.match(stub.messages[0]?.message ?? '', new RegExp(`^Memsearch: opening today's log failed: no memory here: run "Memsearch: ${INIT_MEMORY}"`));
        assert.ok(stub.messages[0]?.message.includes(`${dir} and its parent folders have no memory/ and no .memsearch.toml`), stub.messages[0]?.message);
        assert.deepEqual(stub.messages[0]?.items, [INIT_MEMORY, 'Show output']);
        assert.deepEqual(stub.executed, [{ command: Commands.init, args: [] }]);
        assert.deepEqual(await fs.readdir(dir), [], 'no memory/ made');
    });

    it('with no server, opens the log of the memory around a subfolder the editor opened', async () => {
        const sub = path.join(dir, 'src');
        await fs.mkdir(sub);
        await fs.mkdir(path.join(dir, 'memory'));
        stub.workspaceFolders = [{ uri: Uri.file(sub), name: 'src', index: 0 }];
        const uri = await openTodayLog(new Date(2026, 11, 2));
        assert.equal(uri?.fsPath, path.join(dir, 'memory', '2026-12-02.md'));
        assert.deepEqual(await fs.readdir(sub), []);
    });

    it('asks for a folder when none is open', async () => {
        assert.equal(await openTodayLog(), undefined);
        assert.equal(stub.messages[0]?.level, 'warning');
    });

    it("opens the log the server names for the folder (its .memsearch.toml's memory.paths), creating nothing", async () => {
        const folder = Uri.file(dir);
        stub.workspaceFolders = [{ uri: folder, name: 'ws', index: 0 }];
        const file = path.join(dir, 'notes', '2026-12-02.md');
        await fs.mkdir(path.dirname(file), { recursive: true });
        await fs.writeFile(file, '# 2026-12-02\n\n');
        const server = new FakeServer({ [ServerCommands.today]: { uri: Uri.file(file).toString(), path: file } });
        const uri = await openTodayLog(new Date(2026, 11, 2, 10, 0), server);
        assert.deepEqual(server.commands, [{ command: 'memsearch.today', args: [{ root: folder.toString() }] }]);
        assert.equal(uri?.fsPath, file);
        assert.equal(stub.shown[0]?.uri.fsPath, file);
        await assert.rejects(fs.stat(path.join(dir, 'memory')), 'no memory/ of its own');
    });

    it("says why when the server has no memory there, offers this editor's Initialize command, and creates nothing", async () => {
        stub.workspaceFolders = [{ uri: Uri.file(dir), name: 'ws', index: 0 }];
        const server = new FakeServer();
        server.executeCommand = async () => {
            throw new Error(`no memory here: run \`memsearch-lsp init\` in ${Uri.file(dir).toString()}`); // the server's words
        };
        stub.answers = [INIT_MEMORY];
        assert.equal(await openTodayLog(new Date(2026, 11, 2), server), undefined);
        assert.equal(stub.messages[0]?.message, `Memsearch: opening today's log failed: no memory here: run "Memsearch: ${INIT_MEMORY}" in ${dir}`);
        assert.deepEqual(stub.messages[0]?.items, [INIT_MEMORY, 'Show output']);
        assert.deepEqual(stub.executed, [{ command: Commands.init, args: [] }]);
        await assert.rejects(fs.stat(path.join(dir, 'memory')));
    });
});

describe('server commands', () => {
    beforeEach(() => stub.reset());

    it('reindex runs memsearch.reindex and reports the numbers', async () => {
        const server = new FakeServer({
            [ServerCommands.reindex]: { files_added: 1, files_modified: 2, files_removed: 0, chunks_total: 42, chunks_embedded: 3, chunks_reused: 39, seconds: 1.25 },
        });
        await reindex(server);
        assert.deepEqual(server.commands, [{ command: 'memsearch.reindex', args: [] }]);
        assert.equal(stub.messages[0]?.message, 'Memsearch: reindexed in 1.3 s: files +1 ~2 -0; 42 chunks (3 embedded, 39 reused).');
        assert.match(formatReindex(undefined), /0 chunks/);
    });

    it("compact shows the server's plan for the folder and applies that very plan only when confirmed", async () => {
        const folder = Uri.file('/ws');
        stub.workspaceFolders = [{ uri: folder, name: 'ws', index: 0 }];
        const plan = { archive: [{ from: 'memory/2026-02-02.md' }, { from: 'memory/2026-02-03.md' }], summaries: [{}], chars_before: 900, chars_after: 300, plan_id: 'p1', applied: false };
        const server = new FakeServer({ [ServerCommands.compact]: [plan, plan] });
        stub.answers = [undefined];
        await compact(server);
        const root = folder.toString();
        assert.deepEqual(server.commands, [{ command: 'memsearch.compact', args: [{ root, dryRun: true }] }], 'cancelled: planned only');
        assert.match(stub.messages[0]?.message ?? '', /Compact 2 daily logs of ws into 1 summaries/);
        stub.reset();
        stub.workspaceFolders = [{ uri: folder, name: 'ws', index: 0 }];
        stub.answers = [COMPACT_CONFIRM];
        const done = new FakeServer({ [ServerCommands.compact]: [plan, { ...plan, applied: true }] });
        await compact(done);
        assert.deepEqual(done.commands[1], { command: 'memsearch.compact', args: [{ root, planId: 'p1' }] });
        assert.match(stub.messages[1]?.message ?? '', /compacted 2 logs into 1 summaries/);
    });

    it('compact says when nothing was compacted, and why', async () => {
        stub.workspaceFolders = [{ uri: Uri.file('/ws'), name: 'ws', index: 0 }];
        await compact(new FakeServer({ [ServerCommands.compact]: [{ archive: [], summaries: [], note: 'nothing to compact: no daily logs older than 7 days' }] }));
        assert.equal(stub.messages[0]?.message, 'Memsearch: nothing to compact: no daily logs older than 7 days.');
        stub.reset();
        stub.workspaceFolders = [{ uri: Uri.file('/ws'), name: 'ws', index: 0 }];
        stub.answers = [COMPACT_CONFIRM];
        const plan = { archive: [{ from: 'memory/2026-02-02.md' }], summaries: [{}], plan_id: 'p2' };
        await compact(new FakeServer({ [ServerCommands.compact]: [plan, { ...plan, applied: false, failureReason: 'the user said no' }] }));
        assert.equal(stub.messages[1]?.message, 'Memsearch: nothing was compacted: the user said no.');
    });

    it("compact in a folder without memory offers this editor's Initialize command, not the CLI", async () => {
        stub.workspaceFolders = [{ uri: Uri.file('/ws'), name: 'ws', index: 0 }];
        const server = new FakeServer();
        server.executeCommand = async () => {
            throw new Error('no memory here'); // (without the CLI's hint)
        };
        await compact(server);
        assert.equal(stub.messages[0]?.message, `Memsearch: compaction failed: no memory here: run "Memsearch: ${INIT_MEMORY}"`);
        assert.deepEqual(stub.messages[0]?.items, [INIT_MEMORY, 'Show output']);
        assert.equal(noMemoryText('the index is busy'), undefined);
        assert.equal(manifest.contributes.commands.find((c) => c.command === Commands.init)?.title, INIT_MEMORY, 'the button is the command');
    });

    it('status runs memsearch.status and sums the roots', async () => {
        const result = {
            version: '0.1.0',
            roots: [
                { root: '/a', uri: 'file:///a', collection: 'memsearch', model: 'm', files: 3, chunks: 40 },
                { root: '/b', uri: 'file:///b', collection: 'memsearch', model: 'm', files: 1, chunks: 2 },
            ],
        };
        const formatted = formatStatus(result, ['python: python3']);
        assert.equal(formatted.summary, 'memsearch-lsp 0.1.0: 4 files, 42 chunks in 2 roots');
        assert.ok(formatted.lines.includes('root /a: 3 files, 40 chunks (collection memsearch, model m)'));
        assert.ok(formatted.lines.includes('  python: python3'));
        assert.equal(formatStatus({ version: '0.1.0', roots: [{ root: '/a', files: 1, chunks: 1 }] }, []).summary, 'memsearch-lsp 0.1.0: 1 files, 1 chunks');

        const server = new FakeServer({ [ServerCommands.status]: result });
        await showStatus(server);
        assert.deepEqual(server.commands, [{ command: 'memsearch.status', args: [] }]);
        assert.equal(stub.messages[0]?.message, 'Memsearch: memsearch-lsp 0.1.0: 4 files, 42 chunks in 2 roots');
    });

    it("status says a root is indexing while its first pass runs (no counts yet), not 0 files", async () => {
        const result = { version: '0.1.0', index_passes: 0, roots: [{ root: '/a', root_uri: 'file:///a', indexing: true }] };
        const formatted = formatStatus(result, []);
        assert.equal(formatted.summary, 'memsearch-lsp 0.1.0: /a: indexing…');
        assert.deepEqual(formatted.lines, ['memsearch-lsp 0.1.0', 'root /a: indexing…']);
        const both = formatStatus({ version: '0.1.0', roots: [...result.roots, { root: '/b', files: 1, chunks: 2, collection: 'c', model: 'm' }] }, []);
        assert.equal(both.summary, 'memsearch-lsp 0.1.0: 1 files, 2 chunks; /a: indexing…');
        assert.deepEqual(both.lines.slice(1), ['root /a: indexing…', 'root /b: 1 files, 2 chunks (collection c, model m)']);
        assert.equal(
            formatStatus({ version: '0.1.0', roots: [result.roots[0], { root: '/c', indexing: true }] }, []).summary,
            'memsearch-lsp 0.1.0: 2 roots indexing…',
        );

        await showStatus(new FakeServer({ [ServerCommands.status]: result }));
        assert.equal(stub.messages[0]?.message, 'Memsearch: memsearch-lsp 0.1.0: /a: indexing…');
    });

    it('says so when the server is not running, and offers a restart', async () => {
        const server = new FakeServer();
        server.isRunning = false;
        stub.answers = ['Restart server'];
        await reindex(server);
        assert.equal(server.commands.length, 0);
        assert.equal(stub.messages[0]?.level, 'error');
        assert.match(stub.messages[0]?.message ?? '', /not running/);
        assert.equal(server.restarts, 1);
        await showStatus(server);
        assert.equal(server.commands.length, 0, 'status without a server shows the client side only');
    });

    it('waits for a server that is starting instead of saying it is not running', async () => {
        const server = new FakeServer();
        server.isRunning = false;
        const starting = server as FakeServer & { started(): Promise<boolean> };
        starting.started = async () => {
            await new Promise((resolve) => setTimeout(resolve, 50));
            server.isRunning = true;
            return true;
        };
        await reindex(server);
        assert.equal(stub.messages.filter((m) => m.level === 'error').length, 0);
        assert.equal(server.commands.length, 1);
    });

    it('search asks memsearch/search with the symbol limit', async () => {
        const server = new FakeServer();
        stub.set('memsearch.search.symbolLimit', 15);
        const done = searchMemory(server, 'redis');
        assert.deepEqual(server.requests, []); // debounced: nothing asked yet
        // past the 200 ms debounce: polled, not slept, so a loaded machine only makes it slower
        for (const deadline = Date.now() + 10_000; server.requests.length === 0 && Date.now() < deadline; ) {
            await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const picker = stub.quickPicks[0];
        assert.ok(picker);
        assert.deepEqual(server.requests, [{ method: 'memsearch/search', params: { query: 'redis', topK: 15 } }]);
        picker.hide();
        await done;
    });
});

describe('command registration', () => {
    beforeEach(() => stub.reset());

    it('registers every command of package.json, in the client namespace', async () => {
        const server = new FakeServer();
        const host = { serverPython: async () => undefined, install: async () => undefined, restart: async () => undefined, memoryChanged: () => undefined };
        const disposables = [...registerCommands(server, new IndexStatus(window.createStatusBarItem())), ...registerSetupCommands(host)];
        const contributed = manifest.contributes.commands.map((c) => c.command).sort();
        assert.deepEqual([...stub.commands.keys()].sort(), contributed);
        assert.deepEqual(Object.values(Commands).sort(), contributed);
        for (const id of contributed) {
            assert.match(id, /^memsearch\.client\./);
        }
        await stub.commands.get(Commands.restart)?.();
        assert.equal(server.restarts, 1);
        for (const disposable of disposables) {
            disposable.dispose();
        }
        assert.equal(stub.commands.size, 0);
    });

    it("does not collide with the server's commands, which the language client registers itself", () => {
        registerCommands(new FakeServer(), new IndexStatus(window.createStatusBarItem()));
        // vscode-languageclient's ExecuteCommandFeature calls commands.registerCommand for each
        // command of the server's executeCommandProvider; that throws on an existing id.
        for (const id of Object.values(ServerCommands)) {
            assert.doesNotThrow(() => commands.registerCommand(id, () => undefined), id);
        }
        assert.throws(() => commands.registerCommand(Commands.search, () => undefined), /already exists/);
    });
});
