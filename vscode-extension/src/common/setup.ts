/**
 * First run: install the private server with progress, "Initialize memory in this folder",
 * "Remember..." and "Copy MCP server configuration".
 */
import * as vscode from 'vscode';
import { guard, INIT_MEMORY, reportFailure } from './commands';
import { Commands, Contexts } from './constants';
import { carriedWheel, findBasePython, hasModule, InstallError, installServer, pythonCandidates, runStreaming, type Installed, type ProcessResult, type ServerHome } from './install';
import { showLog, traceError, traceInfo } from './log';
import { moduleCommand, PYTHON_ENV } from './python';
import { chooseFolder } from './settings';
import { isMemoryFolder } from './workspace';

export const INSTALL_SERVER = 'Install the memsearch-lsp server';
const SHOW_OUTPUT = 'Show output';
const TRY_AGAIN = 'Try again';
export const OPEN_TODAY = "Open today's log";

/** Install (or upgrade) the carried wheel into the private venv, with a cancellable progress notification. */
export async function installWithProgress(
    home: ServerHome,
    wheelFolder: string,
    preferred: readonly (readonly string[])[],
    title: string,
): Promise<Installed | undefined> {
    const wheel = carriedWheel(wheelFolder);
    if (wheel === undefined) {
        const message =
            `Memsearch: this build of the extension carries no server (no memsearch_lsp wheel in ${wheelFolder}). ` +
            'Install memsearch-lsp into a Python yourself (README, "Install") and set memsearch.interpreter, or install a .vsix built with `npx vsce package`.';
        traceError(message);
        const choice = await vscode.window.showErrorMessage(message, SHOW_OUTPUT);
        if (choice === SHOW_OUTPUT) {
            showLog();
        }
        return undefined;
    }
    const base = await findBasePython(pythonCandidates(preferred));
    if (!base.ok) {
        traceError(`Install: ${base.message}`);
        const choice = await vscode.window.showErrorMessage(`Memsearch: ${base.message}`, SHOW_OUTPUT);
        if (choice === SHOW_OUTPUT) {
            showLog();
        }
        return undefined;
    }
    traceInfo(`Installing memsearch-lsp ${wheel.version} into ${home.venv} with Python ${base.python.version} (${base.python.executable})`);
    try {
        const installed = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title, cancellable: true },
            (progress, token) => {
                const controller = new AbortController();
                token.onCancellationRequested(() => {
                    controller.abort();
                });
                return installServer({
                    python: base.python,
                    wheel,
                    home,
                    log: (line) => {
                        traceInfo(line);
                    },
                    step: (message) => {
                        traceInfo(`Install: ${message}`);
                        progress.report({ message });
                    },
                    signal: controller.signal,
                });
            },
        );
        void vscode.window.showInformationMessage(`Memsearch: installed memsearch-lsp ${installed.version} (in ${home.venv}).`);
        return installed;
    } catch (error) {
        traceError('Install failed:', error);
        if (error instanceof InstallError && error.reason === 'cancelled') {
            void vscode.window.showWarningMessage(`Memsearch: ${error.message}`);
            return undefined;
        }
        const text = error instanceof Error ? error.message : String(error);
        const choice = await vscode.window.showErrorMessage(`Memsearch: ${text}`, SHOW_OUTPUT, TRY_AGAIN);
        if (choice === SHOW_OUTPUT) {
            showLog();
        } else if (choice === TRY_AGAIN) {
            return installWithProgress(home, wheelFolder, preferred, title);
        }
        return undefined;
    }
}

/** Set the walkthrough's context key: is any open folder a memory workspace? */
export function updateMemoryContext(): void {
    const any = (vscode.workspace.workspaceFolders ?? []).some(isMemoryFolder);
    void vscode.commands.executeCommand('setContext', Contexts.memoryWorkspace, any);
}

/** What the onboarding commands need from the server manager (server.ts; tests pass a fake). */
export interface SetupHost {
    /** The Python that has memsearch_lsp, or undefined when none was found. */
    serverPython(): Promise<readonly string[] | undefined>;
    /** Install the private server, then start it. */
    install(): Promise<void>;
    restart(): Promise<void>;
    /** A folder became a memory workspace. */
    memoryChanged(): void;
}

/** The CLI (`<python> -m memsearch_lsp ...`) of a Python. */
export type Cli = (args: readonly string[], options?: { cwd?: string; input?: string }) => Promise<ProcessResult>;

export function cliOf(python: readonly string[]): Cli {
    return (args, options) => {
        const run = moduleCommand(python, args);
        return runStreaming(run.command, run.args, {
            cwd: options?.cwd,
            input: options?.input,
            env: { ...process.env, ...PYTHON_ENV },
            timeoutMs: 300_000,
        });
    };
}

/** The Python with the server; when there is none, offers the install first (undefined: not installed). */
export async function ensureServerPython(host: SetupHost, why: string): Promise<readonly string[] | undefined> {
    const python = await host.serverPython();
    if (python !== undefined) {
        return python;
    }
    const choice = await vscode.window.showWarningMessage(`Memsearch: ${why} needs the memsearch-lsp server, which is not installed yet.`, INSTALL_SERVER);
    if (choice !== INSTALL_SERVER) {
        return undefined;
    }
    await host.install();
    return host.serverPython();
}

/**
 * Why a CLI call failed: the message (and hint) of its `--json` error (`{"error": {"message", "hint"}}` on stdout),
 * else the last line of its output.
 */
export function cliFailure(result: ProcessResult): string {
    for (const line of result.stdout.trim().split(/\r?\n/).reverse()) {
        try {
            const error = (JSON.parse(line) as { error?: { message?: unknown; hint?: unknown } } | null)?.error;
            if (typeof error?.message === 'string' && error.message !== '') {
                return typeof error.hint === 'string' && error.hint !== '' ? `${error.message} (${error.hint})` : error.message;
            }
        } catch {
            // not JSON: the last line below
        }
    }
    const lines = `${result.stderr}\n${result.stdout}`.trim().split(/\r?\n/);
    return lines[lines.length - 1] || `exit ${String(result.code)}`;
}

/** "Memsearch: Initialize memory in this folder": `memsearch-lsp init <folder>`, then open MEMORY.md and restart the server. */
export async function initMemory(host: SetupHost, cliFor: (python: readonly string[]) => Cli = cliOf): Promise<string[] | undefined> {
    const folder = await chooseFolder('the memory (memory/MEMORY.md, .memsearch.toml) is created in it.');
    if (folder === undefined) {
        return undefined;
    }
    const python = await ensureServerPython(host, 'Initializing memory');
    if (python === undefined) {
        return undefined;
    }
    const result = await cliFor(python)(['init', folder.uri.fsPath, '--json'], { cwd: folder.uri.fsPath });
    let created: string[] = [];
    try {
        created = (JSON.parse(result.stdout) as { created?: string[] }).created ?? [];
    } catch {
        // reported below
    }
    if (result.code !== 0) {
        await reportFailure('initializing memory', cliFailure(result));
        return undefined;
    }
    traceInfo(`init ${folder.uri.fsPath}: ${result.stdout.trim()}`);
    host.memoryChanged();
    const memory = vscode.Uri.joinPath(folder.uri, 'memory', 'MEMORY.md');
    try {
        await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(memory), { preview: false });
    } catch (error) {
        traceError(`Opening ${memory.fsPath}:`, error);
    }
    void vscode.window.showInformationMessage(
        created.length > 0
            ? `Memsearch: memory ready in ${folder.name} (created ${created.join(', ')}).`
            : `Memsearch: ${folder.name} already had a memory; nothing was overwritten.`,
    );
    await host.restart();
    return created;
}

/** "Memsearch: Remember...": a note from an input box, appended to today's log by `memsearch-lsp remember`. */
export async function rememberNote(host: SetupHost, cliFor: (python: readonly string[]) => Cli = cliOf): Promise<string | undefined> {
    const folder = await chooseFolder('notes are remembered in its memory.');
    if (folder === undefined) {
        return undefined;
    }
    if (!isMemoryFolder(folder)) {
        const choice = await vscode.window.showWarningMessage(`Memsearch: no memory in ${folder.name} yet.`, INIT_MEMORY);
        if (choice === INIT_MEMORY) {
            await vscode.commands.executeCommand(Commands.init);
        }
        return undefined;
    }
    const text = await vscode.window.showInputBox({
        title: 'Memsearch: Remember',
        prompt: "A note for today's log (Markdown; indexed at once, searchable by you and your agents)",
        placeHolder: 'e.g. We chose Postgres over MySQL for the audit log: row-level security',
        ignoreFocusOut: true,
        validateInput: (value) => (value.trim() === '' ? 'Write the note to remember.' : undefined),
    });
    if (text === undefined || text.trim() === '') {
        return undefined;
    }
    const python = await ensureServerPython(host, 'Remembering a note');
    if (python === undefined) {
        return undefined;
    }
    const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'memsearch: remembering' }, () =>
        cliFor(python)(['remember', '--workspace', folder.uri.fsPath, '--json', '-'], { cwd: folder.uri.fsPath, input: text }),
    );
    let source = '';
    try {
        source = (JSON.parse(result.stdout) as { source?: string }).source ?? '';
    } catch {
        // reported below
    }
    if (result.code !== 0 || source === '') {
        await reportFailure('remember', cliFailure(result));
        return undefined;
    }
    traceInfo(`remember: ${result.stdout.trim()}`);
    const choice = await vscode.window.showInformationMessage(`Memsearch: remembered in ${source}.`, OPEN_TODAY);
    if (choice === OPEN_TODAY) {
        await vscode.commands.executeCommand(Commands.openToday);
    }
    return source;
}

/** The `mcpServers` entry that other agents (Claude Code `.mcp.json`, Cursor) use to reach this memory. */
export function mcpServerConfig(
    python: readonly string[],
    folder: string,
): { mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }> } {
    return { mcpServers: { memsearch: { ...moduleCommand(python, ['mcp', '--workspace', folder]), env: { ...PYTHON_ENV } } } };
}

/** "Memsearch: Copy MCP server configuration": the JSON for another agent, on the clipboard. */
export async function copyMcpConfig(host: SetupHost, hasMcp: (python: readonly string[]) => Promise<boolean> = (p) => hasModule(p, 'mcp')): Promise<string | undefined> {
    const folder = await chooseFolder('the MCP server serves its memory.');
    if (folder === undefined) {
        return undefined;
    }
    const python = await ensureServerPython(host, 'The MCP server');
    if (python === undefined) {
        return undefined;
    }
    if (!(await hasMcp(python))) {
        void vscode.window.showWarningMessage(
            `Memsearch: the server's Python (${python.join(' ')}) lacks the mcp extra: run \`${python.join(' ')} -m pip install 'memsearch-lsp[mcp]'\`, or "Memsearch: Install the memsearch-lsp server" (its private environment has it).`,
        );
        return undefined;
    }
    const text = JSON.stringify(mcpServerConfig(python, folder.uri.fsPath), null, 2);
    await vscode.env.clipboard.writeText(text);
    void vscode.window.showInformationMessage(
        "Memsearch: copied the MCP server configuration. Paste it into your agent's MCP settings (Claude Code: .mcp.json; Cursor: .cursor/mcp.json). VS Code's agent mode lists \"Memsearch memory\" by itself.",
    );
    return text;
}

/** "Memsearch: Install the memsearch-lsp server" and the onboarding commands. */
export function registerSetupCommands(host: SetupHost): vscode.Disposable[] {
    return [
        vscode.commands.registerCommand(Commands.installServer, guard('install', () => host.install())),
        vscode.commands.registerCommand(Commands.init, guard('initializing memory', () => initMemory(host))),
        vscode.commands.registerCommand(Commands.remember, guard('remember', () => rememberNote(host))),
        vscode.commands.registerCommand(Commands.copyMcpConfig, guard('copying the MCP configuration', () => copyMcpConfig(host))),
    ];
}
