/** The extension's commands (ids in `memsearch.client.*`): search, today's log, reindex, compact, status, restart. */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Commands, SEARCH_REQUEST, ServerCommands } from './constants';
import { showLog, traceError, traceInfo, traceLines } from './log';
import { openHit, pickSearchHit } from './search';
import { getMemoryPaths, getNumberSetting, getStringSetting, workspaceFolderFor } from './settings';
import type { IndexStatus } from './status';

/** What the commands need from the running server (server.ts; tests pass a fake). */
export interface ServerControl {
    readonly isRunning: boolean;
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

/** True when the server runs; otherwise says so (with a way out) and returns false. */
export async function requireServer(server: ServerControl): Promise<boolean> {
    if (server.isRunning) {
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

/** Log a failure and show it, with a way to the log. */
export async function reportFailure(what: string, error: unknown): Promise<void> {
    traceError(`${what} failed:`, error);
    const choice = await vscode.window.showErrorMessage(`Memsearch: ${what} failed: ${errorText(error)}`, SHOW_OUTPUT);
    if (choice === SHOW_OUTPUT) {
        showLog();
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

/** Open `memory/YYYY-MM-DD.md` of the current workspace folder, creating it if missing. */
export async function openTodayLog(now: Date = new Date()): Promise<vscode.Uri | undefined> {
    const folder = workspaceFolderFor(vscode.window.activeTextEditor?.document.uri);
    if (folder === undefined) {
        void vscode.window.showWarningMessage("Memsearch: open a folder first; today's log lives in its memory folder.");
        return undefined;
    }
    const date = localDate(now);
    const uri = dailyLogUri(folder.uri, getMemoryPaths(folder.uri)[0] ?? 'memory', date);
    try {
        if (await ensureDailyLog(uri, date)) {
            traceInfo(`Created ${uri.fsPath}`);
        }
        const document = await vscode.workspace.openTextDocument(uri);
        const editor = await vscode.window.showTextDocument(document, { preview: false });
        const end = document.lineAt(document.lineCount - 1).range.end;
        editor.selection = new vscode.Selection(end, end);
        editor.revealRange(new vscode.Range(end, end));
    } catch (error) {
        await reportFailure("opening today's log", error);
        return undefined;
    }
    return uri;
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

export async function compact(server: ServerControl): Promise<void> {
    if (!(await requireServer(server))) {
        return;
    }
    const days = getNumberSetting('compact.olderThanDays', 7);
    const archive = getStringSetting('compact.archiveDir', 'memory/archive');
    const choice = await vscode.window.showWarningMessage(
        `Compact daily logs older than ${days} days into summaries?`,
        {
            modal: true,
            detail: `The server writes the summaries and moves the original logs to ${archive}, as one edit that you can review and undo.`,
        },
        COMPACT_CONFIRM,
    );
    if (choice !== COMPACT_CONFIRM) {
        return;
    }
    try {
        const plan = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: 'Memsearch: compacting old logs' },
            () => server.executeCommand(ServerCommands.compact, []),
        );
        traceInfo('Compaction plan:', plan);
        const choice = await vscode.window.showInformationMessage('Memsearch: compaction finished; the plan is in the output.', SHOW_OUTPUT);
        if (choice === SHOW_OUTPUT) {
            showLog();
        }
    } catch (error) {
        await reportFailure('compaction', error);
    }
}

/** The lines of "Show status": the client's facts, then the server's roots. */
export function formatStatus(result: unknown, client: readonly string[]): { lines: string[]; summary: string } {
    const version = field(result, 'version');
    const rawRoots = field(result, 'roots');
    const roots = Array.isArray(rawRoots) ? rawRoots : [];
    const lines = [`memsearch-lsp ${typeof version === 'string' ? version : '?'}`, ...client.map((line) => `  ${line}`)];
    let files = 0;
    let chunks = 0;
    for (const root of roots) {
        files += count(root, 'files');
        chunks += count(root, 'chunks');
        const text = (key: string): string => {
            const value = field(root, key);
            return typeof value === 'string' || typeof value === 'number' ? String(value) : '?';
        };
        lines.push(
            `root ${text('root')}: ${count(root, 'files')} files, ${count(root, 'chunks')} chunks ` +
                `(collection ${text('collection')}, model ${text('model')})`,
        );
    }
    const summary =
        `memsearch-lsp ${typeof version === 'string' ? version : '?'}: ${files} files, ${chunks} chunks` +
        (roots.length === 1 ? '' : ` in ${roots.length} roots`);
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
        vscode.commands.registerCommand(Commands.openToday, guard("today's log", () => openTodayLog())),
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
