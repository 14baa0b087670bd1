/**
 * The private server: find a Python >= 3.10, make a venv in the extension's global storage, install
 * the memsearch_lsp wheel that the .vsix carries (its dependencies from PyPI), and say what to do when
 * that fails. Node only (no `vscode`), so the tests drive it against a real Python.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const MIN_PYTHON: readonly [number, number] = [3, 10];

/** The folder of the .vsix that holds the wheel (package.json `files`). */
export const WHEEL_FOLDER = 'server';

/** The wheel the extension carries: `server/memsearch_lsp-<version>-py3-none-any.whl`. */
export interface CarriedWheel {
    readonly file: string;
    readonly version: string;
    readonly sha256: string;
}

/** Compare dotted versions by their numbers (`0.10.0` > `0.9.1`); a missing part counts as 0. */
export function compareVersions(a: string, b: string): number {
    const parts = (v: string): number[] => (v.match(/\d+/g) ?? []).map(Number);
    const x = parts(a);
    const y = parts(b);
    for (let i = 0; i < Math.max(x.length, y.length); i++) {
        const d = (x[i] ?? 0) - (y[i] ?? 0);
        if (d !== 0) {
            return d;
        }
    }
    return 0;
}

export function sha256File(file: string): string {
    return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** The newest memsearch_lsp wheel in `folder`, or undefined when there is none. */
export function carriedWheel(folder: string): CarriedWheel | undefined {
    let names: string[];
    try {
        names = fs.readdirSync(folder);
    } catch {
        return undefined;
    }
    const wheels = names
        .map((name) => ({ name, version: /^memsearch_lsp-([^-]+)-.*\.whl$/.exec(name)?.[1] }))
        .filter((w): w is { name: string; version: string } => w.version !== undefined)
        .sort((a, b) => compareVersions(b.version, a.version));
    const newest = wheels[0];
    if (newest === undefined) {
        return undefined;
    }
    const file = path.join(folder, newest.name);
    return { file, version: newest.version, sha256: sha256File(file) };
}

/** Where the private server lives under the extension's global storage folder. */
export interface ServerHome {
    readonly root: string;
    readonly venv: string;
    /** What was installed last (written only after a whole install succeeded). */
    readonly record: string;
}

export function serverHome(globalStorage: string): ServerHome {
    const root = path.join(globalStorage, 'server');
    return { root, venv: path.join(root, 'venv'), record: path.join(root, 'installed.json') };
}

export function venvPython(venv: string, platform: NodeJS.Platform = process.platform): string {
    return platform === 'win32' ? path.join(venv, 'Scripts', 'python.exe') : path.join(venv, 'bin', 'python');
}

export interface InstallRecord {
    readonly version: string;
    readonly sha256: string;
    readonly wheel: string;
    readonly basePython: string;
    readonly installedAt: string;
}

export function readRecord(home: ServerHome): InstallRecord | undefined {
    try {
        const value = JSON.parse(fs.readFileSync(home.record, 'utf8')) as Partial<InstallRecord>;
        return typeof value.version === 'string' && typeof value.sha256 === 'string' ? (value as InstallRecord) : undefined;
    } catch {
        return undefined;
    }
}

export type InstallState =
    | { readonly kind: 'missing' }
    | { readonly kind: 'current'; readonly python: string; readonly record: InstallRecord }
    | { readonly kind: 'outdated'; readonly python: string; readonly record: InstallRecord; readonly carried: CarriedWheel };

/**
 * `current` when the venv holds exactly the carried wheel; `outdated` when the extension carries
 * another wheel of the same or a newer version (an update of the extension); `missing` when nothing
 * complete is installed (no record: never installed, or an install that did not finish).
 */
export function installState(home: ServerHome, carried: CarriedWheel | undefined, platform: NodeJS.Platform = process.platform): InstallState {
    const record = readRecord(home);
    const python = venvPython(home.venv, platform);
    if (record === undefined || !fs.existsSync(python)) {
        return { kind: 'missing' };
    }
    if (carried !== undefined && carried.sha256 !== record.sha256 && compareVersions(carried.version, record.version) >= 0) {
        return { kind: 'outdated', python, record, carried };
    }
    return { kind: 'current', python, record };
}

// --- Processes -------------------------------------------------------------------------------------

export interface ProcessResult {
    /** Exit status, or an errno name (`ENOENT`) when the program could not start, or `cancelled`. */
    readonly code: number | string;
    readonly stdout: string;
    readonly stderr: string;
}

export interface ProcessOptions {
    readonly cwd?: string;
    readonly env?: NodeJS.ProcessEnv;
    /** Written to stdin, which is then closed (stdin is closed at once without it). */
    readonly input?: string;
    /** Each line of output as it comes (stdout and stderr). */
    readonly onLine?: (line: string) => void;
    readonly signal?: AbortSignal;
    readonly timeoutMs?: number;
}

/** Run a program to its end; failures are a result, never an exception. */
export function runStreaming(command: string, args: readonly string[], options: ProcessOptions = {}): Promise<ProcessResult> {
    return new Promise((resolve) => {
        let stdout = '';
        let stderr = '';
        let settled = false;
        const finish = (code: number | string): void => {
            if (!settled) {
                settled = true;
                clearTimeout(timer);
                options.signal?.removeEventListener('abort', abort);
                resolve({ code, stdout, stderr });
            }
        };
        const child = spawn(command, [...args], { cwd: options.cwd, env: options.env ?? process.env, windowsHide: true, stdio: 'pipe' });
        const abort = (): void => {
            child.kill();
            finish('cancelled');
        };
        const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => {
            child.kill();
            finish('timeout');
        }, options.timeoutMs);
        options.signal?.addEventListener('abort', abort);
        if (options.signal?.aborted) {
            abort();
        }
        const lines = (sink: (text: string) => void) => {
            let partial = '';
            return (chunk: Buffer): void => {
                const text = chunk.toString('utf8');
                sink(text);
                partial += text;
                const parts = partial.split(/\r?\n/);
                partial = parts.pop() ?? '';
                for (const line of parts) {
                    options.onLine?.(line);
                }
            };
        };
        child.stdout.on('data', lines((t) => {
            stdout += t;
        }));
        child.stderr.on('data', lines((t) => {
            stderr += t;
        }));
        child.on('error', (error: NodeJS.ErrnoException) => {
            finish(error.code ?? 'error');
        });
        child.on('close', (code) => {
            finish(code ?? 'killed');
        });
        child.stdin.on('error', () => undefined); // a program that exits without reading its input
        child.stdin.end(options.input ?? '');
    });
}

// --- Finding a Python --------------------------------------------------------------------------------

export interface PythonProbe {
    readonly command: readonly string[];
    readonly version: string;
    readonly executable: string;
    /** `venv` and `ensurepip` import: `python -m venv` makes a venv with pip. */
    readonly canVenv: boolean;
}

const PROBE_SCRIPT =
    'import json, platform, sys\n' +
    'try:\n    import venv, ensurepip\n    ok = True\nexcept Exception:\n    ok = False\n' +
    'sys.stdout.write(json.dumps({"version": platform.python_version(), "executable": sys.executable, "venv": ok}))';

export type Runner = (command: string, args: readonly string[], options?: ProcessOptions) => Promise<ProcessResult>;

export async function probePython(command: readonly string[], run: Runner = runStreaming): Promise<PythonProbe | undefined> {
    const [program, ...rest] = command;
    if (program === undefined) {
        return undefined;
    }
    const result = await run(program, [...rest, '-c', PROBE_SCRIPT], { timeoutMs: 20_000 });
    if (result.code !== 0) {
        return undefined;
    }
    try {
        const value = JSON.parse(result.stdout) as { version: string; executable: string; venv: boolean };
        return { command, version: value.version, executable: value.executable, canVenv: value.venv };
    } catch {
        return undefined;
    }
}

/** The Pythons to try, best first: the one given (the Python extension's), then the usual names on PATH. */
export function pythonCandidates(preferred: readonly (readonly string[])[] = [], platform: NodeJS.Platform = process.platform): (readonly string[])[] {
    const names =
        platform === 'win32'
            ? [['py', '-3'], ['python']]
            : [['python3'], ['python3.13'], ['python3.12'], ['python3.11'], ['python3.10'], ['python3.14'], ['python']];
    const extra = platform === 'darwin' ? [['/opt/homebrew/bin/python3'], ['/usr/local/bin/python3']] : [];
    const seen = new Set<string>();
    return [...preferred, ...names, ...extra].filter((c) => {
        const key = c.join('\0');
        if (c.length === 0 || seen.has(key)) {
            return false;
        }
        seen.add(key);
        return true;
    });
}

export type BasePython =
    | { readonly ok: true; readonly python: PythonProbe }
    | { readonly ok: false; readonly reason: 'no-python' | 'too-old' | 'no-venv'; readonly message: string; readonly found: readonly PythonProbe[] };

export function isSupported(version: string): boolean {
    return compareVersions(version, MIN_PYTHON.join('.')) >= 0;
}

/** The first candidate that is Python >= 3.10 and can make a venv; else why none fits and what to do. */
export async function findBasePython(candidates: readonly (readonly string[])[], run: Runner = runStreaming): Promise<BasePython> {
    const found: PythonProbe[] = [];
    for (const command of candidates) {
        const probe = await probePython(command, run);
        if (probe === undefined) {
            continue;
        }
        found.push(probe);
        if (isSupported(probe.version) && probe.canVenv) {
            return { ok: true, python: probe };
        }
    }
    const supported = found.filter((p) => isSupported(p.version));
    const min = MIN_PYTHON.join('.');
    if (found.length === 0) {
        return {
            ok: false,
            reason: 'no-python',
            found,
            message:
                `No Python found (tried ${candidates.map((c) => c.join(' ')).join(', ')}). Install Python ${min} or newer ` +
                '(python.org, or your package manager: apt install python3 python3-venv, brew install python), then run "Memsearch: Install the memsearch-lsp server" again; ' +
                'or set memsearch.interpreter to a Python that has memsearch-lsp.',
        };
    }
    if (supported.length === 0) {
        return {
            ok: false,
            reason: 'too-old',
            found,
            message:
                `The server needs Python ${min} or newer; found only ${found.map((p) => `${p.version} (${p.executable})`).join(', ')}. ` +
                `Install a newer Python (python.org, or your package manager), then run "Memsearch: Install the memsearch-lsp server" again.`,
        };
    }
    const first = supported[0];
    const minor = first === undefined ? '3' : first.version.split('.').slice(0, 2).join('.');
    return {
        ok: false,
        reason: 'no-venv',
        found,
        message:
            `Python ${first?.version ?? ''} (${first?.executable ?? ''}) cannot create virtual environments: its venv/ensurepip modules are missing. ` +
            `On Debian or Ubuntu: sudo apt install python3-venv (or python${minor}-venv); then run "Memsearch: Install the memsearch-lsp server" again.`,
    };
}

// --- Installing ------------------------------------------------------------------------------------

export type InstallFailure = 'venv' | 'network' | 'pip' | 'verify' | 'cancelled';

export class InstallError extends Error {
    constructor(
        readonly reason: InstallFailure,
        message: string,
    ) {
        super(message);
        this.name = 'InstallError';
    }
}

/** Output lines of pip that mean it could not reach the package index. */
const NETWORK_PATTERNS = [
    /Could not find a version that satisfies the requirement/i,
    /No matching distribution found/i,
    /Failed to establish a new connection/i,
    /Temporary failure in name resolution/i,
    /Name or service not known/i,
    /Network is unreachable/i,
    /Connection refused/i,
    /Read timed out/i,
    /ProxyError/i,
    /SSLError|CERTIFICATE_VERIFY_FAILED/i,
];

/** What a failed `pip install` means for the user: no network (or no index), or another pip error. */
export function explainPipFailure(output: string): { reason: 'network' | 'pip'; message: string } {
    if (NETWORK_PATTERNS.some((pattern) => pattern.test(output))) {
        return {
            reason: 'network',
            message:
                "Could not download the server's dependencies from PyPI (no network, a proxy, or a package index that is not reachable). " +
                'Connect to the internet (set HTTPS_PROXY, or PIP_INDEX_URL for a private index, in the environment VS Code starts from), then run "Memsearch: Install the memsearch-lsp server" again. The log is in the Memsearch output.',
        };
    }
    const lines = output.trim().split(/\r?\n/).filter((line) => /error/i.test(line));
    return {
        reason: 'pip',
        message: `pip could not install the server${lines.length > 0 ? `: ${lines.slice(-2).join(' ')}` : ''}. The whole log is in the Memsearch output; "Memsearch: Install the memsearch-lsp server" tries again.`,
    };
}

/** `import memsearch_lsp` and its main dependencies (found, not loaded: cheap). */
const VERIFY_SCRIPT =
    'import importlib.util as u, json, sys\n' +
    'import memsearch_lsp\n' +
    'missing = [m for m in ("pygls", "lsprotocol", "pymilvus", "fastembed", "tree_sitter_markdown", "mcp") if u.find_spec(m) is None]\n' +
    'sys.stdout.write(json.dumps({"version": memsearch_lsp.__version__, "file": memsearch_lsp.__file__, "missing": missing}))';

export interface InstallOptions {
    /** The Python the venv is made with (findBasePython). */
    readonly python: PythonProbe;
    readonly wheel: CarriedWheel;
    readonly home: ServerHome;
    /** Each line of output of the steps, for the log. */
    readonly log: (line: string) => void;
    /** The step now running, for the progress notification. */
    readonly step?: (message: string) => void;
    readonly signal?: AbortSignal;
    /** More `pip install` arguments (tests: `--no-deps --no-index`). */
    readonly pipArgs?: readonly string[];
    /** Called with the venv's Python once it exists (tests put the dependencies of another environment on its path here). */
    readonly venvCreated?: (python: string) => Promise<void> | void;
    readonly platform?: NodeJS.Platform;
    readonly run?: Runner;
}

export interface Installed {
    readonly python: string;
    readonly version: string;
    readonly location: string;
}

/**
 * Install (or upgrade) the carried wheel with its `mcp` extra into the private venv: create the venv
 * when it has no working Python, `pip install <wheel>[mcp]` (dependencies from PyPI), reinstall the
 * wheel itself (a rebuilt wheel of the same version replaces the old one), check the import, then
 * write the record. An install that stops half way leaves no record, so the next start offers it again.
 */
export async function installServer(options: InstallOptions): Promise<Installed> {
    const run = options.run ?? runStreaming;
    const { home, wheel, log } = options;
    const python = venvPython(home.venv, options.platform);
    const env: NodeJS.ProcessEnv = { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PYTHONUTF8: '1' };
    delete env.PYTHONPATH;
    delete env.PYTHONHOME;
    delete env.VIRTUAL_ENV;
    const exec = async (what: string, command: string, args: readonly string[]): Promise<ProcessResult> => {
        options.step?.(what);
        log(`> ${[command, ...args].join(' ')}`);
        const result = await run(command, args, { env, onLine: log, signal: options.signal });
        if (result.code === 'cancelled') {
            throw new InstallError('cancelled', 'The install was cancelled; nothing was changed that a new install does not redo.');
        }
        return result;
    };

    fs.rmSync(home.record, { force: true });
    fs.mkdirSync(home.root, { recursive: true });
    const works = fs.existsSync(python) && (await run(python, ['-c', 'import pip'], { env, timeoutMs: 30_000 })).code === 0;
    if (!works) {
        fs.rmSync(home.venv, { recursive: true, force: true });
        const [base, ...baseArgs] = options.python.command;
        const created = await exec(`Creating a Python ${options.python.version} environment`, base ?? options.python.executable, [...baseArgs, '-m', 'venv', home.venv]);
        if (created.code !== 0) {
            const output = created.stdout + created.stderr;
            const fix = /ensurepip/i.test(output)
                ? ' On Debian or Ubuntu install python3-venv (sudo apt install python3-venv), then try again.'
                : ' Check that the disk is writable and has space, or set memsearch.interpreter to a Python that has memsearch-lsp.';
            throw new InstallError('venv', `Could not create a Python environment in ${home.venv} (exit ${String(created.code)}).${fix}`);
        }
    }
    await options.venvCreated?.(python);

    const pip = [python, ['-m', 'pip', 'install', ...(options.pipArgs ?? [])]] as const;
    const deps = await exec('Installing memsearch-lsp and its dependencies from PyPI (a few minutes the first time)', pip[0], [
        ...pip[1],
        `${wheel.file}[mcp]`,
    ]);
    if (deps.code !== 0) {
        const failure = explainPipFailure(deps.stdout + deps.stderr);
        throw new InstallError(failure.reason, failure.message);
    }
    const own = await exec(`Installing memsearch-lsp ${wheel.version}`, pip[0], [...pip[1], '--no-deps', '--force-reinstall', wheel.file]);
    if (own.code !== 0) {
        const failure = explainPipFailure(own.stdout + own.stderr);
        throw new InstallError(failure.reason, failure.message);
    }

    const checked = await exec('Checking the install', python, ['-c', VERIFY_SCRIPT]);
    let report: { version?: string; file?: string; missing?: string[] } = {};
    try {
        report = JSON.parse(checked.stdout) as typeof report;
    } catch {
        // reported below
    }
    if (checked.code !== 0 || report.version !== wheel.version || (report.missing ?? []).length > 0) {
        throw new InstallError(
            'verify',
            `The installed server does not import (${report.missing?.length ? `missing: ${report.missing.join(', ')}` : checked.stderr.trim().split(/\r?\n/).pop() ?? ''}). ` +
                'Run "Memsearch: Install the memsearch-lsp server" again; the log is in the Memsearch output.',
        );
    }
    const record: InstallRecord = {
        version: wheel.version,
        sha256: wheel.sha256,
        wheel: path.basename(wheel.file),
        basePython: options.python.executable,
        installedAt: new Date().toISOString(),
    };
    fs.writeFileSync(home.record, `${JSON.stringify(record, null, 2)}\n`);
    log(`Installed memsearch-lsp ${wheel.version} in ${home.venv}`);
    return { python, version: wheel.version, location: report.file ?? '' };
}

/** Can `<python>` import `module`? (found, not loaded) */
export async function hasModule(interpreter: readonly string[], module: string, run: Runner = runStreaming): Promise<boolean> {
    const [command, ...rest] = interpreter;
    if (command === undefined || !/^[A-Za-z_][\w.]*$/.test(module)) {
        return false;
    }
    const script = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(${JSON.stringify(module)}) else 1)`;
    return (await run(command, [...rest, '-c', script], { timeoutMs: 20_000 })).code === 0;
}
