/** Which Python runs the server, and whether memsearch_lsp can be imported there. */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { PIP_PACKAGE, SERVER_MODULE } from './constants';
import { traceVerbose, traceWarn } from './log';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** The part of the Python extension's API used here (see the @vscode/python-extension package). */
export interface EnvironmentPath {
    readonly id: string;
    readonly path: string;
}
export interface ResolvedEnvironment {
    readonly executable: { readonly uri?: vscode.Uri };
}
export interface PythonEnvironmentsApi {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    onDidChangeActiveEnvironmentPath(listener: (event: unknown) => unknown): { dispose(): unknown };
}
export interface PythonExtensionApi {
    readonly environments?: PythonEnvironmentsApi;
}

/** The Python extension's environments API, or undefined when it is not installed. */
export async function getPythonEnvironments(): Promise<PythonEnvironmentsApi | undefined> {
    const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
    if (extension === undefined) {
        return undefined;
    }
    try {
        const api = extension.isActive ? extension.exports : await extension.activate();
        return api?.environments;
    } catch (error) {
        traceWarn(`Could not activate ${PYTHON_EXTENSION_ID}:`, error);
        return undefined;
    }
}

export type InterpreterSource = 'setting' | 'python-extension' | 'path' | 'installed' | 'private';

export interface Interpreter {
    /** The command line of the Python, e.g. `['/venv/bin/python']` or `['py', '-3']`. */
    readonly command: readonly string[];
    readonly source: InterpreterSource;
}

/** Why the server cannot run on `platform` (Windows), else undefined: it needs Unix sockets and POSIX locks. */
export function unsupportedPlatform(platform: NodeJS.Platform = process.platform): string | undefined {
    return platform === 'win32'
        ? 'Memsearch: the memsearch-lsp server runs on Linux and macOS; Windows is not supported. Open the folder in WSL (Remote - WSL) instead.'
        : undefined;
}

export function defaultPython(platform: NodeJS.Platform = process.platform): string {
    return platform === 'win32' ? 'python' : 'python3';
}

/**
 * 1. the `memsearch.interpreter` setting; 2. the Python extension's active environment,
 * when that extension is installed; 3. `python3` on PATH. (When the first has no server, the server manager
 * goes on with `python3`, then installedServerPythons(), then its private environment.)
 */
export async function findInterpreter(
    setting: readonly string[],
    environments: PythonEnvironmentsApi | undefined,
    resource?: vscode.Uri,
    platform: NodeJS.Platform = process.platform,
): Promise<Interpreter> {
    if (setting.length > 0) {
        return { command: [...setting], source: 'setting' };
    }
    if (environments !== undefined) {
        try {
            const active = environments.getActiveEnvironmentPath(resource);
            const resolved = await environments.resolveEnvironment(active);
            const executable = resolved?.executable.uri?.fsPath;
            if (executable) {
                return { command: [executable], source: 'python-extension' };
            }
            traceVerbose(`The Python extension's active environment (${active.path}) has no executable.`);
        } catch (error) {
            traceWarn("Could not read the Python extension's active environment:", error);
        }
    }
    return { command: [defaultPython(platform)], source: 'path' };
}

/** The Python named by the `#!` line of a script (a console script of a venv), when it is an absolute path. */
function shebangPython(script: string): string | undefined {
    try {
        const fd = fs.openSync(script, 'r');
        try {
            const head = Buffer.alloc(512);
            const line = head.subarray(0, fs.readSync(fd, head, 0, head.length, 0)).toString('utf8').split('\n', 1)[0] ?? '';
            const python = line.startsWith('#!') ? line.slice(2).trim().split(/\s+/)[0] : undefined;
            return python !== undefined && path.isAbsolute(python) && path.basename(python).startsWith('python') ? python : undefined;
        } finally {
            fs.closeSync(fd);
        }
    } catch {
        return undefined;
    }
}

/**
 * The Pythons of a memsearch-lsp installed as a command (the README's `pipx install .`, or any venv on PATH), those
 * that exist, in this order: the Python of `memsearch-lsp` on PATH (its `#!` line), then pipx's venv of it
 * (`$PIPX_HOME/venvs`, `~/.local/share/pipx/venvs`, older pipx's `~/.local/pipx/venvs`).
 */
export function installedServerPythons(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string[] {
    const found: string[] = [];
    const add = (python: string | undefined): void => {
        if (python !== undefined && !found.includes(python) && fs.existsSync(python)) {
            found.push(python);
        }
    };
    for (const dir of (env.PATH ?? '').split(path.delimiter)) {
        if (dir !== '' && path.isAbsolute(dir)) {
            add(shebangPython(path.join(dir, PIP_PACKAGE)));
        }
    }
    const venvs = [env.PIPX_HOME ? path.join(env.PIPX_HOME, 'venvs') : undefined, path.join(home, '.local', 'share', 'pipx', 'venvs'), path.join(home, '.local', 'pipx', 'venvs')];
    for (const dir of venvs) {
        if (dir !== undefined) {
            add(path.join(dir, PIP_PACKAGE, 'bin', 'python'));
        }
    }
    return found;
}

/**
 * How every Python we start runs (the server, MCP, the CLI, the check that the server is installed): `-E` (no
 * PYTHONPATH, PYTHONHOME or other PYTHON* variable is read), then code that takes the working folder (`''` under
 * `-c`; a workspace, whose `json.py` or `memsearch_lsp/` would otherwise shadow the real ones) off the import path
 * before it imports anything. Not `-I`: it implies `-s`, which drops the user's site-packages, where
 * `pip install --user` puts the server ("not installed" it said then). Not `-P` (the working folder alone): Python
 * 3.11+, and the server runs on 3.10. `-E` does not cover PYTHONUSERBASE (site.py reads it, and a `.pth` file in
 * the folder it names runs code at start-up): every Python we start gets it empty (PYTHON_ENV), so the user site is
 * the default one.
 */
const OFF_CWD = 'import sys; sys.path[:] = [p for p in sys.path if p]';

/** What every Python we start gets in its environment on top of ours (an empty PYTHONUSERBASE: the default user site). */
export const PYTHON_ENV: Readonly<Record<string, string>> = { PYTHONUTF8: '1', PYTHONUSERBASE: '' };

/** `-E -c "<take the working folder off sys.path>; <code>"`: the arguments of a Python that runs `code`. */
export function isolatedCode(code: string): string[] {
    return ['-E', '-c', `${OFF_CWD}; ${code}`];
}

/** `<python> -E -c "...; runpy.run_module('memsearch_lsp', ...)" <args>` (what `-m memsearch_lsp` does) as (command, args). */
export function moduleCommand(interpreter: readonly string[], args: readonly string[]): { command: string; args: string[] } {
    const [command, ...rest] = interpreter;
    const run = `import runpy; runpy.run_module("${SERVER_MODULE}", run_name="__main__", alter_sys=True)`;
    return { command: command ?? defaultPython(), args: [...rest, ...isolatedCode(run), ...args] };
}

/** `<python> -m memsearch_lsp serve` as (command, args). */
export function serverCommand(interpreter: readonly string[]): { command: string; args: string[] } {
    return moduleCommand(interpreter, ['serve']);
}

export type ModuleCheck =
    | { readonly ok: true; readonly version: string }
    | { readonly ok: false; readonly reason: 'python-not-found' | 'not-installed'; readonly detail: string };

export interface RunResult {
    readonly code: number | string | null;
    readonly stdout: string;
    readonly stderr: string;
}
export type Runner = (command: string, args: readonly string[], cwd?: string) => Promise<RunResult>;

/** Run a program to its end; failures are a result (code = exit status or an errno name). */
export const runProcess: Runner = (command, args, cwd) =>
    new Promise((resolve) => {
        execFile(command, [...args], { cwd, env: { ...process.env, ...PYTHON_ENV }, timeout: 30_000, windowsHide: true }, (error, stdout, stderr) => {
            const code = error === null ? 0 : typeof error.code === 'number' || typeof error.code === 'string' ? error.code : 1;
            resolve({ code, stdout, stderr });
        });
    });

const CHECK_SCRIPT = `import ${SERVER_MODULE}, sys; sys.stdout.write(getattr(${SERVER_MODULE}, "__version__", "unknown"))`;

/** Can `<python> -c "import memsearch_lsp"` run? Also reads the server's version. */
export async function checkServerModule(interpreter: readonly string[], run: Runner = runProcess, cwd?: string): Promise<ModuleCheck> {
    const [command, ...rest] = interpreter;
    if (command === undefined) {
        return { ok: false, reason: 'python-not-found', detail: 'no Python command' };
    }
    const result = await run(command, [...rest, ...isolatedCode(CHECK_SCRIPT)], cwd);
    if (result.code === 0) {
        return { ok: true, version: result.stdout.trim() || 'unknown' };
    }
    if (result.code === 'ENOENT' || result.code === 'EACCES') {
        return { ok: false, reason: 'python-not-found', detail: `${command}: ${result.code}` };
    }
    const lines = result.stderr.trim().split(/\r?\n/);
    return { ok: false, reason: 'not-installed', detail: lines[lines.length - 1] ?? '' };
}

/** Quote one argument for a shell, only when it needs it. */
export function shellQuote(arg: string): string {
    return /^[\w@%+=:,./\\-]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, '\\$1')}"`;
}

/** The command that installs the server into `interpreter` from `source`: a checkout folder or a wheel. */
export function installCommand(interpreter: readonly string[], source: string): string {
    return [...interpreter.map(shellQuote), '-m', 'pip', 'install', shellQuote(source)].join(' ');
}

/** What the user can install the server from until it is released on PyPI. */
export type ServerSource = 'checkout' | 'wheel';

/**
 * `checkout` when `path` is a folder whose pyproject.toml names the memsearch-lsp project, `wheel`
 * for a memsearch_lsp wheel file, else undefined. `readText` returns a file's text, or undefined.
 */
export function serverSourceKind(path: string, readText: (file: string) => string | undefined): ServerSource | undefined {
    const base = path.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? '';
    if (/^memsearch_lsp-[^-]+-.*\.whl$/.test(base)) {
        return 'wheel';
    }
    const pyproject = readText(`${path.replace(/[\\/]+$/, '')}/pyproject.toml`);
    const name = pyproject?.match(/^\s*name\s*=\s*["']([^"']+)["']/m)?.[1];
    return name === PIP_PACKAGE ? 'checkout' : undefined;
}

/** The message shown when the server cannot start: what is wrong and how to fix it. */
export function missingServerMessage(interpreter: Interpreter, check: Exclude<ModuleCheck, { ok: true }>): string {
    const python = interpreter.command.map(shellQuote).join(' ');
    const origin =
        interpreter.source === 'setting'
            ? 'from memsearch.interpreter'
            : interpreter.source === 'python-extension'
              ? "the Python extension's active environment"
              : 'on PATH';
    if (check.reason === 'python-not-found') {
        return (
            `Memsearch: cannot run Python "${python}" (${origin}). ` +
            'Set memsearch.interpreter to a Python that has memsearch-lsp installed, e.g. ["/path/to/.venv/bin/python"].'
        );
    }
    return (
        `Memsearch: the language server is not installed in ${python} (${origin}): "import ${SERVER_MODULE}" failed. ` +
        `Install it from a memsearch-lsp checkout or wheel with \`${installCommand(interpreter.command, '/path/to/memsearch-lsp')}\` ` +
        `("Copy install command" asks for the path), or set memsearch.interpreter to a Python that has it. ` +
        `(\`pip install ${PIP_PACKAGE}\` works only after a release to PyPI.)`
    );
}

/** The message shown when no Python has the server and the extension has not installed its own yet. */
export function notInstalledMessage(tried: readonly Interpreter[]): string {
    const where = tried.map((i) => i.command.map(shellQuote).join(' ')).join(', ');
    return (
        `Memsearch: the memsearch-lsp server is not installed${where ? ` (no memsearch_lsp in ${where})` : ''}. ` +
        '"Install the memsearch-lsp server" puts it into a private Python environment of the extension ' +
        '(Python 3.10+ needed; its dependencies come from PyPI, a few minutes the first time). ' +
        'Or set memsearch.interpreter to a Python that has it.'
    );
}
