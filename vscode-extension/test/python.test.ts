import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import {
    PYTHON_EXTENSION_ID,
    checkServerModule,
    defaultPython,
    findInterpreter,
    getPythonEnvironments,
    installCommand,
    installedServerPythons,
    serverSourceKind,
    missingServerMessage,
    runProcess,
    serverCommand,
    shellQuote,
    unsupportedPlatform,
    type PythonEnvironmentsApi,
    type RunResult,
} from '../src/common/python';
import { Uri, stub, vsUri as toVsUri } from './stubs/vscode';

function environments(executable: string | undefined, fail = false): PythonEnvironmentsApi & { asked: unknown[] } {
    const asked: unknown[] = [];
    return {
        asked,
        getActiveEnvironmentPath: (resource) => {
            asked.push(resource);
            if (fail) {
                throw new Error('no environment');
            }
            return { id: 'env', path: executable ?? '/nowhere' };
        },
        resolveEnvironment: async () => (executable === undefined ? undefined : { executable: { uri: toVsUri(Uri.file(executable)) } }),
        onDidChangeActiveEnvironmentPath: () => ({ dispose() {} }),
    };
}

describe('finding Python', () => {
    beforeEach(() => stub.reset());

    it('uses memsearch.interpreter first', async () => {
        const found = await findInterpreter(['/venv/bin/python'], environments('/other/python'));
        assert.deepEqual(found, { command: ['/venv/bin/python'], source: 'setting' });
    });

    it("then the Python extension's active environment", async () => {
        const env = environments('/conda/bin/python');
        const folder = Uri.file('/ws');
        const found = await findInterpreter([], env, toVsUri(folder));
        assert.deepEqual(found, { command: [Uri.file('/conda/bin/python').fsPath], source: 'python-extension' });
        assert.deepEqual(env.asked, [folder]);
    });

    it('then python3 on PATH', async () => {
        assert.deepEqual(await findInterpreter([], undefined, undefined, 'linux'), { command: ['python3'], source: 'path' });
        assert.deepEqual(await findInterpreter([], environments(undefined), undefined, 'darwin'), { command: ['python3'], source: 'path' });
        assert.deepEqual(await findInterpreter([], environments('/x', true), undefined, 'linux'), { command: ['python3'], source: 'path' });
        assert.equal(defaultPython('win32'), 'python');
        assert.match(unsupportedPlatform('win32') ?? '', /Linux and macOS; Windows is not supported/);
        assert.equal(unsupportedPlatform('linux'), undefined);
        assert.equal(unsupportedPlatform('darwin'), undefined);
    });

    it('finds a server installed as a command: memsearch-lsp on PATH (its #! Python), then pipx\'s venv', () => {
        const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memsearch-pipx-'));
        try {
            const venvPython = (root: string): string => {
                const python = path.join(root, 'venvs', 'memsearch-lsp', 'bin', 'python');
                fs.mkdirSync(path.dirname(python), { recursive: true });
                fs.writeFileSync(python, '');
                return python;
            };
            const home = path.join(tmp, 'home');
            assert.deepEqual(installedServerPythons({ PATH: path.join(tmp, 'bin') }, home), [], 'nothing installed');
            const pipx = venvPython(path.join(home, '.local', 'share', 'pipx'));
            assert.deepEqual(installedServerPythons({ PATH: '' }, home), [pipx], "pipx's default venv");
            const custom = venvPython(path.join(tmp, 'pipx-home'));
            assert.deepEqual(installedServerPythons({ PIPX_HOME: path.join(tmp, 'pipx-home') }, home), [custom, pipx], '$PIPX_HOME first');
            const venv = venvPython(path.join(tmp, 'venv'));
            fs.mkdirSync(path.join(tmp, 'bin'));
            fs.writeFileSync(path.join(tmp, 'bin', 'memsearch-lsp'), `#!${venv}\nimport sys\n`, { mode: 0o755 });
            assert.deepEqual(installedServerPythons({ PATH: ['relative', path.join(tmp, 'bin')].join(path.delimiter) }, home), [venv, pipx], 'PATH first');
            fs.writeFileSync(path.join(tmp, 'bin', 'memsearch-lsp'), '#!/usr/bin/env python3\n');
            assert.deepEqual(installedServerPythons({ PATH: path.join(tmp, 'bin') }, home), [pipx], 'no absolute Python in its #! line');
        } finally {
            fs.rmSync(tmp, { recursive: true, force: true });
        }
    });

    it('gets the environments API from ms-python.python, activating it when needed', async () => {
        assert.equal(await getPythonEnvironments(), undefined, 'not installed');
        const api = { environments: environments('/p') };
        let activated = 0;
        stub.extensions.set(PYTHON_EXTENSION_ID, {
            isActive: false,
            exports: undefined,
            activate: async () => {
                activated += 1;
                return api;
            },
        });
        assert.equal(await getPythonEnvironments(), api.environments);
        assert.equal(activated, 1);
        stub.extensions.set(PYTHON_EXTENSION_ID, { isActive: true, exports: {}, activate: async () => ({}) });
        assert.equal(await getPythonEnvironments(), undefined, 'an old API without environments');
        stub.extensions.set(PYTHON_EXTENSION_ID, { isActive: false, exports: undefined, activate: () => Promise.reject(new Error('boom')) });
        assert.equal(await getPythonEnvironments(), undefined, 'activation failed');
    });
});

describe('starting the server', () => {
    it('runs memsearch_lsp serve as `-m` would, with -E and not -I (which hides a `pip install --user`)', () => {
        const { command, args } = serverCommand(['/venv/bin/python']);
        assert.equal(command, '/venv/bin/python');
        assert.deepEqual([args[0], args[1], args.slice(3)], ['-E', '-c', ['serve']]);
        assert.match(args[2] ?? '', /^import sys; sys\.path\[:\] = \[p for p in sys\.path if p\]; .*runpy\.run_module\("memsearch_lsp", run_name="__main__", alter_sys=True\)$/);
        assert.deepEqual(serverCommand(['py', '-3']).args, ['-3', ...args]);
        assert.ok(!args.some((arg) => /^-[A-Za-z]*[Is]/.test(arg)), `no -I or -s: ${args.join(' ')}`);
    });

    it("finds a server in the user's site-packages, never the workspace's modules nor PYTHONPATH's (real python3)", async (t) => {
        const probe = await runProcess('python3', ['-c', 'import site, sys; print(bool(site.ENABLE_USER_SITE) and sys.prefix == sys.base_prefix)']);
        if (probe.stdout.trim() !== 'True') {
            t.skip('needs a python3 on PATH outside a venv, with user site-packages (code ' + String(probe.code) + ')');
            return;
        }
        const home = fs.mkdtempSync(path.join(os.tmpdir(), 'memsearch-home-'));
        const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'memsearch-ws-'));
        const saved = { HOME: process.env.HOME, PYTHONPATH: process.env.PYTHONPATH, PYTHONUSERBASE: process.env.PYTHONUSERBASE };
        try {
            process.env.HOME = home; // where `pip install --user` puts it: ~/.local/lib/pythonX.Y/site-packages
            process.env.PYTHONPATH = workspace; // ignored (-E)
            // -E does not cover PYTHONUSERBASE: a .pth in the user site it names runs code at start-up (emptied: PYTHON_ENV)
            const minor = (await runProcess('python3', ['-c', 'import sys; print(sys.version_info[1])'])).stdout.trim();
            const planted = path.join(workspace, 'userbase', 'lib', `python3.${minor}`, 'site-packages');
            fs.mkdirSync(planted, { recursive: true });
            fs.writeFileSync(path.join(planted, 'planted.pth'), 'import sys; sys.exit("a .pth of PYTHONUSERBASE ran")\n');
            process.env.PYTHONUSERBASE = path.join(workspace, 'userbase');
            const userSite = (await runProcess('python3', ['-E', '-c', 'import site; print(site.getusersitepackages())'])).stdout.trim();
            assert.ok(userSite.startsWith(home), userSite);
            fs.mkdirSync(path.join(userSite, 'memsearch_lsp'), { recursive: true });
            fs.writeFileSync(path.join(userSite, 'memsearch_lsp', '__init__.py'), '__version__ = "9.9.9+user"\n');
            fs.writeFileSync(
                path.join(userSite, 'memsearch_lsp', '__main__.py'),
                'import json, os, sys\nprint(json.dumps({"argv": sys.argv[1:], "main": __name__, "cwd": [p for p in sys.path if p in ("", os.getcwd())]}))\n',
            );
            // the workspace's modules: a json.py and a memsearch_lsp/ that must never be imported
            fs.writeFileSync(path.join(workspace, 'json.py'), 'raise SystemExit("the workspace\'s json.py was imported")\n');
            fs.mkdirSync(path.join(workspace, 'memsearch_lsp'));
            fs.writeFileSync(path.join(workspace, 'memsearch_lsp', '__init__.py'), '__version__ = "workspace"\n');

            assert.deepEqual(await checkServerModule(['python3'], runProcess, workspace), { ok: true, version: '9.9.9+user' });
            const { command, args } = serverCommand(['python3']);
            const served = await runProcess(command, args, workspace);
            assert.equal(served.code, 0, served.stderr);
            assert.deepEqual(JSON.parse(served.stdout), { argv: ['serve'], main: '__main__', cwd: [] });
        } finally {
            for (const [key, value] of Object.entries(saved)) {
                if (value === undefined) {
                    Reflect.deleteProperty(process.env, key);
                } else {
                    process.env[key] = value;
                }
            }
            fs.rmSync(home, { recursive: true, force: true });
            fs.rmSync(workspace, { recursive: true, force: true });
        }
    });

    it('checks that memsearch_lsp imports, and reads its version', async () => {
        const calls: { command: string; args: readonly string[] }[] = [];
        const runner = (result: RunResult) => async (command: string, args: readonly string[]) => {
            calls.push({ command, args });
            return result;
        };
        assert.deepEqual(await checkServerModule(['py', '-3'], runner({ code: 0, stdout: '0.1.0', stderr: '' })), { ok: true, version: '0.1.0' });
        assert.equal(calls[0]?.command, 'py');
        assert.equal(calls[0]?.args[0], '-3');
        assert.equal(calls[0]?.args[1], '-E'); // a workspace's modules never shadow the server's (the test above)
        assert.equal(calls[0]?.args[2], '-c');
        assert.match(calls[0]?.args[3] ?? '', /^import sys; sys\.path\[:\] = .*; import memsearch_lsp/);

        const missing = await checkServerModule(
            ['python3'],
            runner({ code: 1, stdout: '', stderr: "Traceback...\nModuleNotFoundError: No module named 'memsearch_lsp'\n" }),
        );
        assert.deepEqual(missing, { ok: false, reason: 'not-installed', detail: "ModuleNotFoundError: No module named 'memsearch_lsp'" });
        const noPython = await checkServerModule(['/no/python'], runner({ code: 'ENOENT', stdout: '', stderr: '' }));
        assert.equal(noPython.ok, false);
        assert.equal(!noPython.ok && noPython.reason, 'python-not-found');
    });

    it('recognises a checkout or a wheel to install from, and nothing else', () => {
        const files: Record<string, string> = {
            '/src/memsearch-lsp/pyproject.toml': '[build-system]\nrequires = []\n\n[project]\nname = "memsearch-lsp"\n',
            '/src/other/pyproject.toml': '[project]\nname = "other"\n',
        };
        const read = (file: string): string | undefined => files[file];
        assert.equal(serverSourceKind('/src/memsearch-lsp', read), 'checkout');
        assert.equal(serverSourceKind('/src/memsearch-lsp/', read), 'checkout');
        assert.equal(serverSourceKind('/src/other', read), undefined);
        assert.equal(serverSourceKind('/nothing', read), undefined);
        assert.equal(serverSourceKind('/dl/memsearch_lsp-0.1.0-py3-none-any.whl', read), 'wheel');
        assert.equal(serverSourceKind('/dl/other-0.1.0-py3-none-any.whl', read), undefined);
    });

    it('checks a real process: a missing program is "python-not-found"', async () => {
        const result = await checkServerModule(['/definitely/not/a/python']);
        assert.equal(!result.ok && result.reason, 'python-not-found');
    });

    it('says how to fix a missing server', () => {
        assert.equal(installCommand(['/venv/bin/python'], '/src/memsearch-lsp'), '/venv/bin/python -m pip install /src/memsearch-lsp');
        assert.equal(
            installCommand(['C:\\Program Files\\Python\\python.exe'], 'C:\\src\\memsearch lsp'),
            '"C:\\\\Program Files\\\\Python\\\\python.exe" -m pip install "C:\\\\src\\\\memsearch lsp"',
        );
        assert.equal(shellQuote('a b'), '"a b"');
        const message = missingServerMessage({ command: ['python3'], source: 'path' }, { ok: false, reason: 'not-installed', detail: '' });
        assert.match(message, /python3 -m pip install \/path\/to\/memsearch-lsp/);
        assert.match(message, /checkout or wheel/);
        assert.match(message, /only after a release to PyPI/);
        assert.match(message, /memsearch\.interpreter/);
        assert.match(message, /on PATH/);
        const notFound = missingServerMessage({ command: ['/x/python'], source: 'setting' }, { ok: false, reason: 'python-not-found', detail: '' });
        assert.match(notFound, /cannot run Python "\/x\/python" \(from memsearch\.interpreter\)/);
        assert.match(notFound, /memsearch\.interpreter/);
    });
});
