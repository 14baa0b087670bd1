import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Commands, Contexts } from '../src/common/constants';
import type { ProcessResult } from '../src/common/install';
import { INIT_MEMORY } from '../src/common/commands';
import { cliFailure, cliOf, copyMcpConfig, INSTALL_SERVER, initMemory, mcpServerConfig, rememberNote, updateMemoryContext, type Cli, type SetupHost } from '../src/common/setup';
import { findMemoryWorkspace } from '../src/common/workspace';
import { moduleCommand } from '../src/common/python';
import { Uri, stub } from './stubs/vscode';

const REPO_PYTHON = path.resolve('..', '.venv', 'bin', 'python');

class FakeHost implements SetupHost {
    installs = 0;
    restarts = 0;
    changes = 0;
    constructor(public python: readonly string[] | undefined = ['/venv/bin/python']) {}
    async serverPython(): Promise<readonly string[] | undefined> {
        return this.python;
    }
    async install(): Promise<void> {
        this.installs++;
        this.python = ['/private/venv/bin/python'];
    }
    async restart(): Promise<void> {
        this.restarts++;
    }
    memoryChanged(): void {
        this.changes++;
    }
}

/** A CLI that records its calls and answers with `result`. */
function fakeCli(result: ProcessResult): { calls: { python: readonly string[]; args: readonly string[]; input?: string }[]; cliFor: (python: readonly string[]) => Cli } {
    const calls: { python: readonly string[]; args: readonly string[]; input?: string }[] = [];
    return {
        calls,
        cliFor: (python) => async (args, options) => {
            calls.push({ python, args, input: options?.input });
            return result;
        },
    };
}

describe('first-run commands', () => {
    let tmp = '';
    beforeEach(() => {
        stub.reset();
        tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memsearch-setup-'));
    });
    afterEach(() => {
        fs.rmSync(tmp, { recursive: true, force: true });
    });
    const openFolder = (dir: string): void => {
        stub.workspaceFolders = [{ uri: Uri.file(dir), name: path.basename(dir), index: 0 }];
    };

    it('Initialize memory runs `memsearch-lsp init` in the folder (real CLI), opens MEMORY.md and restarts the server', async (t) => {
        if (!fs.existsSync(REPO_PYTHON)) {
            t.skip('needs ../.venv (scripts/test.sh)');
            return;
        }
        openFolder(tmp);
        const host = new FakeHost([REPO_PYTHON]);
        const created = await initMemory(host);
        assert.ok(created?.includes('memory/MEMORY.md'), JSON.stringify(created));
        assert.ok(fs.statSync(path.join(tmp, 'memory', 'MEMORY.md')).isFile());
        assert.ok(fs.statSync(path.join(tmp, '.memsearch.toml')).isFile());
        assert.equal(stub.shown[0]?.uri.fsPath, path.join(tmp, 'memory', 'MEMORY.md'));
        assert.deepEqual([host.restarts, host.changes], [1, 1]);
        assert.match(stub.messages.at(-1)?.message ?? '', /memory ready in .*created .*memory\/MEMORY\.md/);
        // again: nothing is overwritten, and it says so
        fs.writeFileSync(path.join(tmp, 'memory', 'MEMORY.md'), '# Mine\n');
        assert.deepEqual(await initMemory(host), []);
        assert.equal(fs.readFileSync(path.join(tmp, 'memory', 'MEMORY.md'), 'utf8'), '# Mine\n');
        assert.match(stub.messages.at(-1)?.message ?? '', /already had a memory; nothing was overwritten/);
    });

    it('offers the install first when no Python has the server, then uses the installed one', async () => {
        openFolder(tmp);
        const host = new FakeHost();
        host.python = undefined;
        const cli = fakeCli({ code: 0, stdout: '{"created": ["memory/MEMORY.md"]}', stderr: '' });
        stub.answers.push(undefined); // dismissed: nothing runs
        assert.equal(await initMemory(host, cli.cliFor), undefined);
        assert.deepEqual([host.installs, cli.calls.length], [0, 0]);
        assert.match(stub.messages[0]?.message ?? '', /Initializing memory needs the memsearch-lsp server, which is not installed yet/);
        assert.deepEqual(stub.messages[0]?.items, [INSTALL_SERVER]);
        stub.answers.push(INSTALL_SERVER);
        await initMemory(host, cli.cliFor);
        assert.equal(host.installs, 1);
        assert.deepEqual(cli.calls[0], { python: ['/private/venv/bin/python'], args: ['init', Uri.file(tmp).fsPath, '--json'], input: undefined });
    });

    it('says what failed when init fails, and restarts nothing', async () => {
        openFolder(tmp);
        const host = new FakeHost();
        const cli = fakeCli({ code: 1, stdout: '', stderr: 'memsearch-lsp: error: /ro is not writable' });
        assert.equal(await initMemory(host, cli.cliFor), undefined);
        assert.equal(host.restarts, 0);
        assert.deepEqual([stub.messages[0]?.level, stub.messages[0]?.message], ['error', 'Memsearch: initializing memory failed: memsearch-lsp: error: /ro is not writable']);
    });

    it('shows the message and hint of a --json error, not the JSON', async () => {
        openFolder(tmp);
        const error = { error: { message: 'the note is 70000 bytes; notes are limited to 64 KiB', hint: 'split it into several notes' } };
        const cli = fakeCli({ code: 1, stdout: `${JSON.stringify(error)}\n`, stderr: 'memsearch-lsp WARNING something logged\n' });
        fs.mkdirSync(path.join(tmp, 'memory'));
        stub.inputs.push('x');
        assert.equal(await rememberNote(new FakeHost(), cli.cliFor), undefined);
        assert.equal(stub.messages[0]?.message, 'Memsearch: remember failed: the note is 70000 bytes; notes are limited to 64 KiB (split it into several notes)');
        assert.equal(cliFailure({ code: 1, stdout: '{"error": {"message": "no hint"}}', stderr: '' }), 'no hint');
        assert.equal(cliFailure({ code: 2, stdout: '', stderr: '' }), 'exit 2');
    });

    it('asks for a folder when none is open', async () => {
        const host = new FakeHost();
        assert.equal(await initMemory(host, fakeCli({ code: 0, stdout: '{}', stderr: '' }).cliFor), undefined);
        assert.match(stub.messages[0]?.message ?? '', /open a folder first/);
    });

    it('Remember... sends the input box text to `remember` on stdin and offers today\'s log', async () => {
        fs.mkdirSync(path.join(tmp, 'memory'));
        openFolder(tmp);
        const host = new FakeHost();
        const cli = fakeCli({ code: 0, stdout: '{"id": "549a99604cc0e32b", "source": "memory/2026-12-04.md", "heading": "15:30"}', stderr: '' });
        stub.inputs.push('We chose `--flag` -x\nover the other one');
        stub.answers.push("Open today's log");
        stub.commands.set(Commands.openToday, () => undefined);
        assert.equal(await rememberNote(host, cli.cliFor), 'memory/2026-12-04.md');
        assert.deepEqual(cli.calls, [
            { python: ['/venv/bin/python'], args: ['remember', '--workspace', Uri.file(tmp).fsPath, '--json', '-'], input: 'We chose `--flag` -x\nover the other one' },
        ]);
        assert.equal(stub.messages[0]?.message, 'Memsearch: remembered in memory/2026-12-04.md.');
        assert.deepEqual(stub.executed.map((e) => e.command), [Commands.openToday]);
        assert.equal(stub.inputBoxes[0]?.validation, undefined);
    });

    it('Remember... rejects an empty note, and does nothing when dismissed', async () => {
        fs.mkdirSync(path.join(tmp, 'memory'));
        openFolder(tmp);
        const cli = fakeCli({ code: 0, stdout: '{}', stderr: '' });
        stub.inputs.push('   ');
        assert.equal(await rememberNote(new FakeHost(), cli.cliFor), undefined);
        assert.equal(stub.inputBoxes[0]?.validation, 'Write the note to remember.');
        stub.inputs.push(undefined);
        assert.equal(await rememberNote(new FakeHost(), cli.cliFor), undefined);
        assert.equal(cli.calls.length, 0);
    });

    it('Remember... in a subfolder of a memory workspace (VS Code opened on src/) remembers in that memory', async () => {
        fs.mkdirSync(path.join(tmp, 'memory'));
        fs.mkdirSync(path.join(tmp, 'src', 'pkg'), { recursive: true });
        openFolder(path.join(tmp, 'src', 'pkg'));
        const cli = fakeCli({ code: 0, stdout: '{"source": "memory/2026-12-04.md", "heading": "15:30"}', stderr: '' });
        stub.inputs.push('a note');
        assert.equal(await rememberNote(new FakeHost(), cli.cliFor), 'memory/2026-12-04.md');
        assert.equal(cli.calls.length, 1);
        updateMemoryContext();
        assert.deepEqual(stub.executed.at(-1), { command: 'setContext', args: [Contexts.memoryWorkspace, true] });
    });

    it('finds the memory workspace around a folder as the CLI does: itself, else a parent below the home folder', () => {
        const ws = fs.realpathSync(tmp);
        fs.mkdirSync(path.join(ws, 'memory'));
        fs.mkdirSync(path.join(ws, 'src', 'pkg'), { recursive: true });
        fs.mkdirSync(path.join(ws, 'src', 'notes'));
        assert.equal(findMemoryWorkspace(path.join(ws, 'src', 'pkg'), ['memory'], '/nowhere'), ws);
        assert.equal(findMemoryWorkspace(ws, ['memory'], '/nowhere'), ws);
        assert.equal(findMemoryWorkspace(path.join(ws, 'src', 'pkg'), ['notes'], '/nowhere'), path.join(ws, 'src'), 'memory.paths counts');
        fs.writeFileSync(path.join(ws, 'src', '.memsearch.toml'), '');
        assert.equal(findMemoryWorkspace(path.join(ws, 'src', 'pkg'), ['memory'], '/nowhere'), path.join(ws, 'src'), 'the nearest one');
        assert.equal(findMemoryWorkspace(path.join(ws, 'src', 'pkg'), ['memory'], path.join(ws, 'src')), undefined, 'the home folder is never looked at');
        assert.equal(findMemoryWorkspace(path.join(ws, 'elsewhere'), ['nothing-here'], '/nowhere'), undefined);
    });

    it('Remember... outside a memory offers to initialize one', async () => {
        openFolder(tmp);
        stub.answers.push(INIT_MEMORY);
        stub.commands.set(Commands.init, () => undefined);
        const cli = fakeCli({ code: 0, stdout: '{}', stderr: '' });
        assert.equal(await rememberNote(new FakeHost(), cli.cliFor), undefined);
        assert.match(stub.messages[0]?.message ?? '', /no memory in .* yet/);
        assert.deepEqual(stub.executed.map((e) => e.command), [Commands.init]);
        assert.equal(cli.calls.length, 0);
    });

    it('copies the MCP configuration for other agents, when the Python has mcp', async () => {
        openFolder(tmp);
        const host = new FakeHost(['/private/venv/bin/python']);
        assert.equal(await copyMcpConfig(host, async () => false), undefined);
        assert.match(stub.messages[0]?.message ?? '', /lacks the mcp extra/);
        const text = await copyMcpConfig(host, async () => true);
        assert.equal(stub.clipboard, text);
        assert.deepEqual(JSON.parse(stub.clipboard), mcpServerConfig(['/private/venv/bin/python'], Uri.file(tmp).fsPath));
        assert.deepEqual(mcpServerConfig(['py', '-3'], '/ws').mcpServers.memsearch, {
            ...moduleCommand(['py', '-3'], ['mcp', '--workspace', '/ws']),
            env: { PYTHONUTF8: '1', PYTHONUSERBASE: '' },
        });
    });

    it('runs the CLI of a Python as `-m memsearch_lsp` does (the arguments of every Python started: python.test.ts)', async () => {
        const result = await cliOf([process.execPath, '-e', 'process.stdout.write(JSON.stringify(process.argv.slice(1)))', '--'])(['init', '/x']);
        assert.deepEqual([result.code, JSON.parse(result.stdout)], [0, moduleCommand(['python3'], ['init', '/x']).args]);
    });
});
