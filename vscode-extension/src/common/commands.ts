/** The extension's commands (ids in `memsearch.client.*`): search, today's log, reindex, compact, status, restart. */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Commands, SEARCH_REQUEST, ServerCommands } from './constants';
import { showLog, traceError, traceInfo, traceLines } from './log';
import { openHit, pickSearchHit } from './search';
import { chooseFolder, getMemoryPaths, getNumberSetting, workspaceFolderFor } from './settings';
import type { IndexStatus } from './status';
import { findMemoryWorkspace } from './workspace';

/** What the commands need from the running server (server.ts; tests pass a fake). */
export interface ServerControl {
    readonly isRunning: boolean;
    /** Waits for a start or restart in progress (the one a command that activated the extension set off); true
     *  when the server runs then. */
    started?(): Promise<boolean>;
    request(method: string, params: unknown, token?: vscode.CancellationToken): Promise<unknown>;
    executeCommand(command: string, args: readonly unknown[]): Promise<unknown>;
    restart(): Promise<void>;
    /** Client-side facts for "Show status": Python, server version, state. */
    describe(): string[];
}

const SHOW_OUTPUT = 'Show output';
const RESTART = 'Restart server';

function errorText(error: unknown): string {
    return error instanceof Error ? error.message : String(error);
}

/** True when the server runs (once a start in progress ended); otherwise says so (with a way out) and returns false. */
export async function requireServer(server: ServerControl): Promise<boolean> {
    if (server.isRunning || (await server.started?.())) {
        return true;
    }
    const choice = await vscode.window.showErrorMessage('Memsearch: the language server is not running.', SHOW_OUTPUT, RESTART);
    if (choice === SHOW_OUTPUT) {
        showLog();
    } else if (choice === RESTART) {
        await server.restart();
    }
    return false;
}

/** The title of `Commands.init` (package.json), also the button that runs it. */
export const INIT_MEMORY = 'Initialize memory in this folder';

/**
 * The server's "no memory here: run `memsearch-lsp init` in file:///ws" points at the CLI: here it names this
 * extension's command, and the folder by its path. Undefined for any other failure.
 */
export function noMemoryText(text: string): string | undefined {
    if (!text.includes('no memory here')) {
        return undefined;
    }
    const command = `run "Memsearch: ${INIT_MEMORY}"`;
    const said = text.includes('run `memsearch-lsp init`') ? text.replace('run `memsearch-lsp init`', command) : `${text}: ${command}`;
    return said.replace(/file:\/\/[^\s'"`()]+/g, (uri) => vscode.Uri.parse(uri).fsPath);
}

/** Log a failure and show it, with a way to the log (and to "Initialize memory" when the folder has none). */
export async function reportFailure(what: string, error: unknown): Promise<void> {
    traceError(`${what} failed:`, error);
    const noMemory = noMemoryText(errorText(error));
    const choice = await vscode.window.showErrorMessage(
        `Memsearch: ${what} failed: ${noMemory ?? errorText(error)}`,
        ...(noMemory === undefined ? [SHOW_OUTPUT] : [INIT_MEMORY, SHOW_OUTPUT]),
    );
    if (choice === SHOW_OUTPUT) {
        showLog();
    } else if (choice === INIT_MEMORY) {
        await vscode.commands.executeCommand(Commands.init);
    }
}

// --- Search memory -------------------------------------------------------------------------

/** The active editor's selection (one line), to start the search with. */
function selectedText(): string | undefined {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined || editor.selection.isEmpty) {
        return undefined;
    }
    const text = editor.document.getText(editor.selection).trim();
    return text.length > 0 && text.length <= 200 && !text.includes('\n') ? text : undefined;
}

export async function searchMemory(server: ServerControl, initialValue = selectedText()): Promise<void> {
    if (!(await requireServer(server))) {
        return;
    }
    const topK = getNumberSetting('search.symbolLimit', 20);
    const hit = await pickSearchHit((query, k, token) => server.request(SEARCH_REQUEST, { query, topK: k }, token), {
        topK,
        initialValue,
    });
    if (hit !== undefined) {
        await openHit(hit);
    }
}

// --- Open today's log ------------------------------------------------------------------------

/** `YYYY-MM-DD` of a date in local time (the user's "today"). */
export function localDate(now: Date): string {
    const pad = (n: number): string => String(n).padStart(2, '0');
    return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

/** `<folder>/<memoryPath>/<date>.md`; an absolute memory path stands on its own. */
export function dailyLogUri(folder: vscode.Uri, memoryPath: string, date: string): vscode.Uri {
    const name = `${date}.md`;
    if (path.isAbsolute(memoryPath)) {
        return vscode.Uri.file(path.join(memoryPath, name));
    }
    const parts = memoryPath.split(/[\\/]+/).filter((part) => part !== '' && part !== '.');
    return vscode.Uri.joinPath(folder, ...parts, name);
}

/** The slice of `vscode.workspace.fs` used here. */
export interface DailyLogFs {
    stat(uri: vscode.Uri): Thenable<unknown>;
    createDirectory(uri: vscode.Uri): Thenable<void>;
    writeFile(uri: vscode.Uri, content: Uint8Array): Thenable<void>;
}

/** Create the daily log with its `# YYYY-MM-DD` heading when it does not exist; true if created. */
export async function ensureDailyLog(uri: vscode.Uri, date: string, fs: DailyLogFs = vscode.workspace.fs): Promise<boolean> {
    try {
        await fs.stat(uri);
        return false;
    } catch {
        // missing: create it below
    }
    await fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
    await fs.writeFile(uri, new TextEncoder().encode(`# ${date}\n\n`));
    return true;
}

/** Where the server keeps today's log for `folder` (it reads `.memsearch.toml` too), once a start in progress
 * ended (the command may be what activated the extension); undefined: not running. */
async function serverTodayLog(server: ServerControl | undefined, folder: vscode.WorkspaceFolder): Promise<vscode.Uri | undefined> {
    if (server === undefined || !(server.isRunning || (await server.started?.()))) {
        return undefined;
    }
    const result = await server.executeCommand(ServerCommands.today, [{ root: folder.uri.toString() }]);
    const uri = field(result, 'uri');
    const fsPath = field(result, 'path');
    if (typeof uri === 'string' && uri !== '') {
        return vscode.Uri.parse(uri);
    }
    return typeof fsPath === 'string' && fsPath !== '' ? vscode.Uri.file(fsPath) : undefined;
}

/** With no server: today's log in the first memory folder of the memory workspace that holds `folder` (found as the
 * server finds it); a folder in none is refused with the server's words, and nothing is created there. */
function localTodayLog(folder: vscode.WorkspaceFolder, date: string): vscode.Uri {
    const paths = getMemoryPaths(folder.uri);
    const root = findMemoryWorkspace(folder.uri.fsPath, paths);
    if (root === undefined) {
        const folders = paths.map((p) => `${p.replace(/[\\/]+$/, '')}/`).join(' or ');
        throw new Error(`no memory here: run \`memsearch-lsp init\` (${folder.uri.fsPath} and its parent folders have no ${folders} and no .memsearch.toml)`);
    }
    return dailyLogUri(vscode.Uri.file(root), paths[0] ?? 'memory', date);
}

/** Open today's daily log of the current workspace folder: where the server says (its settings and
 * `.memsearch.toml`), or, with no server running, `memory/YYYY-MM-DD.md` of the first `memory.paths` of its memory. */
export async function openTodayLog(now: Date = new Date(), server?: ServerControl): Promise<vscode.Uri | undefined> {
    const folder = workspaceFolderFor(vscode.window.activeTextEditor?.document.uri);
    if (folder === undefined) {
        void vscode.window.showWarningMessage("Memsearch: open a folder first; today's log lives in its memory folder.");
        return undefined;
    }
    const date = localDate(now);
    try {
        const served = await serverTodayLog(server, folder);
        const uri = served ?? localTodayLog(folder, date);
        if (served === undefined && (await ensureDailyLog(uri, date))) {
            traceInfo(`Created ${uri.fsPath}`);
        }
        const document = await vscode.workspace.openTextDocument(uri);
        const editor = await vscode.window.showTextDocument(document, { preview: false });
        const end = document.lineAt(document.lineCount - 1).range.end;
        editor.selection = new vscode.Selection(end, end);
        editor.revealRange(new vscode.Range(end, end));
        return uri;
    } catch (error) {
        await reportFailure("opening today's log", error);
        return undefined;
    }
}

// --- Reindex, compact, status --------------------------------------------------------------

function field(result: unknown, key: string): unknown {
    return result !== null && typeof result === 'object' ? (result as Record<string, unknown>)[key] : undefined;
}

function count(result: unknown, key: string): number {
    const value = field(result, key);
    return typeof value === 'number' ? value : 0;
}

/** One line from the result of `memsearch.reindex`. */
export function formatReindex(result: unknown): string {
    const seconds = count(result, 'seconds');
    return (
        `Memsearch: reindexed in ${seconds.toFixed(1)} s: files +${count(result, 'files_added')} ` +
        `~${count(result, 'files_modified')} -${count(result, 'files_removed')}; ` +
        `${count(result, 'chunks_total')} chunks (${count(result, 'chunks_embedded')} embedded, ${count(result, 'chunks_reused')} reused).`
    );
}

export async function reindex(server: ServerControl): Promise<void> {
    if (!(await requireServer(server))) {
        return;
    }
    try {
        const result = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Window, title: 'memsearch: reindexing' },
            () => server.executeCommand(ServerCommands.reindex, []),
        );
        traceInfo('Reindex:', result);
        void vscode.window.showInformationMessage(formatReindex(result));
    } catch (error) {
        await reportFailure('reindex', error);
    }
}

export const COMPACT_CONFIRM = 'Compact';

/** "Compact old logs": the server plans for the chosen folder (its settings and `.memsearch.toml`), the plan is
 * confirmed here, then applied as one edit VS Code previews (the very plan shown: its `planId`). */
export async function compact(server: ServerControl): Promise<void> {
    if (!(await requireServer(server))) {
        return;
    }
    const folder = await chooseFolder('compaction acts on its memory.');
    if (folder === undefined) {
        return;
    }
    const root = folder.uri.toString();
    try {
        const plan = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: 'Memsearch: planning the compaction' },
            () => server.executeCommand(ServerCommands.compact, [{ root, dryRun: true }]),
        );
        traceInfo('Compaction plan:', plan);
        const logs = Array.isArray(field(plan, 'archive')) ? (field(plan, 'archive') as unknown[]).length : 0;
        const summaries = Array.isArray(field(plan, 'summaries')) ? (field(plan, 'summaries') as unknown[]).length : 0;
        if (logs === 0) {
            const note = field(plan, 'note');
            void vscode.window.showInformationMessage(`Memsearch: ${typeof note === 'string' && note !== '' ? note : 'nothing to compact'}.`);
            return;
        }
        const choice = await vscode.window.showWarningMessage(
            `Compact ${logs} daily logs of ${folder.name} into ${summaries} summaries?`,
            {
                modal: true,
                detail:
                    `${count(plan, 'chars_before')} characters become ${count(plan, 'chars_after')}; the logs move to the archive. ` +
                    'You review the edit before it is applied, and can undo it.',
            },
            COMPACT_CONFIRM,
        );
        if (choice !== COMPACT_CONFIRM) {
            return;
        }
        const result = await server.executeCommand(ServerCommands.compact, [{ root, planId: field(plan, 'plan_id') }]);
        traceInfo('Compaction:', result);
        if (field(result, 'applied') !== true) {
            const why = field(result, 'failureReason') ?? field(result, 'note');
            void vscode.window.showWarningMessage(`Memsearch: nothing was compacted${typeof why === 'string' && why !== '' ? `: ${why}` : ''}.`);
            return;
        }
        const done = await vscode.window.showInformationMessage(`Memsearch: compacted ${logs} logs into ${summaries} summaries.`, SHOW_OUTPUT);
        if (done === SHOW_OUTPUT) {
            showLog();
        }
    } catch (error) {
        await reportFailure('compaction', error);
    }
}

/** The lines of "Show status": the client's facts, then the server's roots. A root whose first index pass runs has
 * no counts yet (only `root`, `root_uri` and `"indexing": true`, docs/protocol.md): "root /ws: indexing…". */
export function formatStatus(result: unknown, client: readonly string[]): { lines: string[]; summary: string } {
    const version = field(result, 'version');
    const rawRoots = field(result, 'roots');
    const roots = Array.isArray(rawRoots) ? rawRoots : [];
    const lines = [`memsearch-lsp ${typeof version === 'string' ? version : '?'}`, ...client.map((line) => `  ${line}`)];
    let files = 0;
    let chunks = 0;
    const indexing: string[] = [];
    for (const root of roots) {
        const text = (key: string): string => {
            const value = field(root, key);
            return typeof value === 'string' || typeof value === 'number' ? String(value) : '?';
        };
        if (field(root, 'indexing') === true) {
            indexing.push(text('root'));
            lines.push(`root ${text('root')}: indexing…`);
            continue;
        }
        files += count(root, 'files');
        chunks += count(root, 'chunks');
        lines.push(
            `root ${text('root')}: ${count(root, 'files')} files, ${count(root, 'chunks')} chunks ` +
                `(collection ${text('collection')}, model ${text('model')})`,
        );
    }
    const indexed = roots.length - indexing.length;
    const parts = indexed > 0 || indexing.length === 0 ? [`${files} files, ${chunks} chunks` + (indexed === 1 ? '' : ` in ${indexed} roots`)] : [];
    if (indexing.length > 0) {
        parts.push(indexing.length === 1 ? `${indexing[0]}: indexing…` : `${indexing.length} roots indexing…`);
    }
    const summary = `memsearch-lsp ${typeof version === 'string' ? version : '?'}: ${parts.join('; ')}`;
    return { lines, summary };
}

export async function showStatus(server: ServerControl): Promise<void> {
    if (!server.isRunning) {
        traceLines(['Memsearch status: the server is not running.', ...server.describe().map((line) => `  ${line}`)]);
        showLog();
        return;
    }
    try {
        const { lines, summary } = formatStatus(await server.executeCommand(ServerCommands.status, []), server.describe());
        traceLines(['Memsearch status:', ...lines]);
        const choice = await vscode.window.showInformationMessage(`Memsearch: ${summary}`, SHOW_OUTPUT);
        if (choice === SHOW_OUTPUT) {
            showLog();
        }
    } catch (error) {
        await reportFailure('status', error);
    }
}

/** A command handler that reports what `body` throws instead of failing silently. */
export const guard =
    (what: string, body: () => Promise<unknown>) =>
    async (): Promise<void> => {
        try {
            await body();
        } catch (error) {
            await reportFailure(what, error);
        }
    };

export function registerCommands(server: ServerControl, status: IndexStatus): vscode.Disposable[] {
    return [
        vscode.commands.registerCommand(Commands.search, guard('search', () => searchMemory(server))),
        vscode.commands.registerCommand(Commands.openToday, guard("today's log", () => openTodayLog(new Date(), server))),
        vscode.commands.registerCommand(Commands.reindex, guard('reindex', () => reindex(server))),
        vscode.commands.registerCommand(Commands.compact, guard('compaction', () => compact(server))),
        vscode.commands.registerCommand(Commands.status, guard('status', () => showStatus(server))),
        vscode.commands.registerCommand(
            Commands.restart,
            guard('restart', async () => {
                status.starting();
                await server.restart();
            }),
        ),
    ];
}
