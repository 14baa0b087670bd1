import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
    carriedWheel,
    compareVersions,
    explainPipFailure,
    findBasePython,
    hasModule,
    InstallError,
    installServer,
    installState,
    pythonCandidates,
    runStreaming,
    serverHome,
    venvPython,
    type ProcessResult,
    type Runner,
} from '../src/common/install';
import { serverCommand } from '../src/common/python';

/** The repository's development environment (scripts/test.sh makes it): a real Python with the server's dependencies. */
const REPO_PYTHON = path.resolve('..', '.venv', 'bin', 'python');
const WHEEL_DIR = path.resolve('server');

function tmpdir(prefix: string): string {
    return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A runner that answers the probe script with what each fake Python says. */
function fakePythons(answers: Record<string, { version: string; venv: boolean } | undefined>): Runner {
    return async (command) => {
        const answer = answers[command];
        if (answer === undefined) {
            return { code: 'ENOENT', stdout: '', stderr: '' };
        }
        return { code: 0, stdout: JSON.stringify({ ...answer, executable: `/usr/bin/${command}` }), stderr: '' };
    };
}

describe('install: versions, wheels and state', () => {
    it('compares versions by their numbers', () => {
        assert.ok(compareVersions('0.10.0', '0.9.1') > 0);
        assert.ok(compareVersions('0.1.0', '0.1') === 0);
        assert.ok(compareVersions('3.9', '3.10') < 0);
    });

    it('carries the newest memsearch_lsp wheel of its folder', () => {
        const dir = tmpdir('memsearch-wheels-');
        try {
            assert.equal(carriedWheel(dir), undefined);
            assert.equal(carriedWheel(path.join(dir, 'missing')), undefined);
            for (const name of ['memsearch_lsp-0.9.0-py3-none-any.whl', 'memsearch_lsp-0.10.0-py3-none-any.whl', 'other-1.0-py3-none-any.whl']) {
                fs.writeFileSync(path.join(dir, name), name);
            }
            const wheel = carriedWheel(dir);
            assert.equal(wheel?.version, '0.10.0');
            assert.equal(path.basename(wheel?.file ?? ''), 'memsearch_lsp-0.10.0-py3-none-any.whl');
            assert.match(wheel?.sha256 ?? '', /^[0-9a-f]{64}$/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it('is missing until a whole install is recorded, outdated when the extension carries another wheel', () => {
        const dir = tmpdir('memsearch-state-');
        try {
            const home = serverHome(dir);
            const carried = { file: '/x/memsearch_lsp-0.2.0-py3-none-any.whl', version: '0.2.0', sha256: 'b'.repeat(64) };
            assert.deepEqual(installState(home, carried, 'linux'), { kind: 'missing' });
            fs.mkdirSync(path.dirname(venvPython(home.venv, 'linux')), { recursive: true });
            fs.writeFileSync(venvPython(home.venv, 'linux'), '');
            assert.deepEqual(installState(home, carried, 'linux'), { kind: 'missing' }, 'a venv without a record: an install that did not finish');
            const record = { version: '0.1.0', sha256: 'a'.repeat(64), wheel: 'w', basePython: '/usr/bin/python3', installedAt: '' };
            fs.writeFileSync(home.record, JSON.stringify(record));
            assert.equal(installState(home, carried, 'linux').kind, 'outdated', 'a newer carried wheel upgrades');
            assert.equal(installState(home, { ...carried, version: '0.1.0' }, 'linux').kind, 'outdated', 'a rebuilt wheel of the same version too');
            assert.equal(installState(home, { ...carried, version: '0.0.9' }, 'linux').kind, 'current', 'never downgrades');
            assert.equal(installState(home, { ...carried, sha256: record.sha256 }, 'linux').kind, 'current');
            assert.equal(installState(home, undefined, 'linux').kind, 'current');
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});

describe('install: finding a Python and explaining failures', () => {
    it('takes the first Python >= 3.10 that can make a venv, the preferred one first', async () => {
        const candidates = pythonCandidates([['/env/bin/python']], 'linux');
        assert.deepEqual(candidates.slice(0, 3), [['/env/bin/python'], ['python3'], ['python3.13']]);
        const found = await findBasePython(candidates, fakePythons({ '/env/bin/python': { version: '3.9.18', venv: true }, 'python3.12': { version: '3.12.1', venv: true } }));
        assert.ok(found.ok);
        assert.deepEqual(found.python.command, ['python3.12']);
    });

    it('says what to do: no Python, only old ones, or no venv module', async () => {
        const none = await findBasePython([['python3']], fakePythons({}));
        assert.ok(!none.ok && none.reason === 'no-python' && /Install Python 3\.10 or newer/.test(none.message), JSON.stringify(none));
        const old = await findBasePython([['python3']], fakePythons({ python3: { version: '3.8.10', venv: true } }));
        assert.ok(!old.ok && old.reason === 'too-old' && old.message.includes('found only 3.8.10'), JSON.stringify(old));
        const noVenv = await findBasePython([['python3']], fakePythons({ python3: { version: '3.12.3', venv: false } }));
        assert.ok(!noVenv.ok && noVenv.reason === 'no-venv' && noVenv.message.includes('sudo apt install python3-venv (or python3.12-venv)'), JSON.stringify(noVenv));
    });

    it('tells a network failure from another pip failure', () => {
        const offline = explainPipFailure(
            "WARNING: Retrying ... Failed to establish a new connection: [Errno -3] Temporary failure in name resolution\nERROR: Could not find a version that satisfies the requirement pygls<3,>=2.0",
        );
        assert.equal(offline.reason, 'network');
        assert.match(offline.message, /Connect to the internet/);
        const other = explainPipFailure('ERROR: No space left on device');
        assert.equal(other.reason, 'pip');
        assert.match(other.message, /No space left on device/);
    });

    it('fails with what to do when pip cannot reach PyPI, and writes no record', async () => {
        const dir = tmpdir('memsearch-offline-');
        try {
            const home = serverHome(dir);
            const python = venvPython(home.venv, 'linux');
            const calls: string[][] = [];
            const run: Runner = async (command, args): Promise<ProcessResult> => {
                calls.push([command, ...args]);
                if (args.includes('venv')) {
                    fs.mkdirSync(path.dirname(python), { recursive: true });
                    fs.writeFileSync(python, '');
                    return { code: 0, stdout: '', stderr: '' };
                }
                if (args.includes('install')) {
                    return { code: 1, stdout: '', stderr: 'ERROR: No matching distribution found for pygls' };
                }
                return { code: 1, stdout: '', stderr: 'No module named pip' };
            };
            const wheel = { file: '/x/memsearch_lsp-0.1.0-py3-none-any.whl', version: '0.1.0', sha256: 'c'.repeat(64) };
            await assert.rejects(
                installServer({ python: { command: ['python3'], version: '3.12.0', executable: '/usr/bin/python3', canVenv: true }, wheel, home, log: () => undefined, run, platform: 'linux' }),
                (error: unknown) => error instanceof InstallError && error.reason === 'network' && /PyPI/.test(error.message),
            );
            assert.ok(calls.some((c) => c.includes('-m') && c.includes('venv')), 'created the venv first');
            assert.ok(calls.some((c) => c.includes(`${wheel.file}[mcp]`)), 'installs the wheel with the mcp extra');
            assert.equal(installState(home, wheel, 'linux').kind, 'missing', 'no record: the next start offers the install again');
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it('runs a program with input and stops it when cancelled', async () => {
        const echoed = await runStreaming(process.execPath, ['-e', 'process.stdin.pipe(process.stdout)'], { input: 'a note\nline two' });
        assert.deepEqual([echoed.code, echoed.stdout], [0, 'a note\nline two']);
        const lines: string[] = [];
        await runStreaming(process.execPath, ['-e', 'console.log("one"); console.error("two")'], { onLine: (line) => lines.push(line) });
        assert.deepEqual(lines.sort(), ['one', 'two']);
        const controller = new AbortController();
        const pending = runStreaming(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { signal: controller.signal });
        controller.abort();
        assert.equal((await pending).code, 'cancelled');
        assert.equal((await runStreaming('/no/such/python', [])).code, 'ENOENT');
    });
});

/** One LSP request over stdio to the server started as the extension starts it: `initialize`, then `shutdown` and `exit`. */
async function initialize(python: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ capabilities?: object; serverInfo?: { name?: string; version?: string } }> {
    const { command, args } = serverCommand([python]);
    const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const send = (message: object): void => {
        const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...message }), 'utf8');
        child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
        child.stdin.write(body);
    };
    const answers = new Map<number, (result: unknown) => void>();
    let buffer = Buffer.alloc(0);
    child.stdout.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        for (;;) {
            const end = buffer.indexOf('\r\n\r\n');
            const length = /Content-Length: (\d+)/i.exec(buffer.subarray(0, Math.max(end, 0)).toString())?.[1];
            if (end < 0 || length === undefined || buffer.length < end + 4 + Number(length)) {
                return;
            }
            const message = JSON.parse(buffer.subarray(end + 4, end + 4 + Number(length)).toString('utf8')) as { id?: number; result?: unknown; method?: string };
            buffer = buffer.subarray(end + 4 + Number(length));
            if (message.id !== undefined && message.method === undefined) {
                answers.get(message.id)?.(message.result);
            } else if (message.id !== undefined) {
                send({ id: message.id, result: null }); // a request of the server (registerCapability, ...)
            }
        }
    });
    const request = (id: number, method: string, params: unknown): Promise<unknown> =>
        new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no answer to ${method} in 120 s; stderr:\n${stderr.slice(-3000)}`)), 120_000);
            answers.set(id, (result) => {
                clearTimeout(timer);
                resolve(result);
            });
            send({ id, method, params });
        });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
        const result = (await request(1, 'initialize', {
            processId: process.pid,
            rootUri: `file://${cwd}`,
            workspaceFolders: [{ uri: `file://${cwd}`, name: 'ws' }],
            capabilities: {},
        })) as { capabilities?: object; serverInfo?: { name?: string; version?: string } };
        await request(2, 'shutdown', null);
        send({ method: 'exit' });
        assert.equal(await exited, 0, stderr.slice(-3000));
        return result;
    } finally {
        child.kill();
    }
}

describe('install: the carried wheel into a real venv (scripts/test.sh builds the wheel and the dev environment)', () => {
    let dir = '';
    before(() => {
        dir = tmpdir('memsearch-install-');
    });
    after(() => {
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it('creates the venv, installs the wheel, upgrades in place, and the server answers initialize', async (t) => {
        const wheel = carriedWheel(WHEEL_DIR);
        if (wheel === undefined || !fs.existsSync(REPO_PYTHON)) {
            t.skip('needs server/*.whl (npm run build-wheel) and ../.venv (scripts/test.sh)');
            return;
        }
        const base = await findBasePython([[REPO_PYTHON]]);
        assert.ok(base.ok, JSON.stringify(base));
        // The dependencies come from the development environment (a .pth of plain paths: its own .pth
        // files, the editable memsearch_lsp among them, are not processed), so nothing is downloaded.
        const sitePackages = (await runStreaming(REPO_PYTHON, ['-c', 'import site; print("\\n".join(site.getsitepackages()))'])).stdout;
        const borrow = async (python: string): Promise<void> => {
            const purelib = (await runStreaming(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'])).stdout.trim();
            fs.writeFileSync(path.join(purelib, 'borrowed-deps.pth'), sitePackages);
        };
        const home = serverHome(dir);
        const log: string[] = [];
        const steps: string[] = [];
        const options = {
            python: base.python,
            wheel,
            home,
            log: (line: string) => log.push(line),
            step: (message: string) => steps.push(message),
            pipArgs: ['--no-deps', '--no-index'],
            venvCreated: borrow,
        };
        const installed = await installServer(options);
        assert.equal(installed.python, venvPython(home.venv));
        assert.equal(installed.version, wheel.version);
        assert.ok(installed.location.startsWith(home.venv), `memsearch_lsp from the venv, not the checkout: ${installed.location}`);
        assert.deepEqual(steps.map((s) => s.split(' ')[0]), ['Creating', 'Installing', 'Installing', 'Checking']);
        assert.ok(log.some((line) => /Successfully installed memsearch[-_]lsp/i.test(line)), log.join('\n'));
        assert.equal(installState(home, wheel).kind, 'current');
        assert.ok(await hasModule([installed.python], 'mcp'), 'the MCP provider sees the mcp extra');

        // An extension update carrying a rebuilt wheel: the same venv is upgraded, not recreated.
        const marker = path.join(home.venv, 'kept');
        fs.writeFileSync(marker, '');
        const record = JSON.parse(fs.readFileSync(home.record, 'utf8')) as Record<string, string>;
        fs.writeFileSync(home.record, JSON.stringify({ ...record, sha256: '0'.repeat(64) }));
        assert.equal(installState(home, wheel).kind, 'outdated');
        steps.length = 0;
        await installServer(options);
        assert.ok(fs.existsSync(marker), 'the venv was kept');
        assert.equal(steps[0]?.split(' ')[0], 'Installing', 'no new venv');
        assert.equal(installState(home, wheel).kind, 'current');

        const ws = path.join(dir, 'ws');
        fs.mkdirSync(path.join(ws, 'memory'), { recursive: true });
        fs.writeFileSync(path.join(ws, 'memory', 'MEMORY.md'), '# Memory\n\n## Redis\n\nTTL is 300 s.\n');
        const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, XDG_CACHE_HOME: path.join(dir, 'cache'), PYTHONUTF8: '1', HF_HUB_OFFLINE: '1' };
        const result = await initialize(installed.python, ws, env);
        assert.ok(result.capabilities, JSON.stringify(result));
        assert.deepEqual([result.serverInfo?.name, result.serverInfo?.version], ['memsearch-lsp', wheel.version]);
    });
});
