/** "Search memory": a QuickPick that asks the server (`memsearch/search`) as the user types. */
import * as vscode from 'vscode';

/** LSP position and range (0-based). */
export interface LspPosition {
    readonly line: number;
    readonly character: number;
}
export interface LspRange {
    readonly start: LspPosition;
    readonly end: LspPosition;
}

/** One result of `memsearch/search` (docs/protocol.md). */
export interface SearchHit {
    readonly id: string;
    readonly source: string;
    readonly uri: string;
    readonly heading: string;
    readonly start_line: number;
    readonly end_line: number;
    readonly score: number;
    readonly snippet: string;
    readonly date: string;
    readonly range?: LspRange;
    /** From a compacted log in the archive (ranked below live memory at equal relevance). */
    readonly archived?: boolean;
}

export interface SearchItem extends vscode.QuickPickItem {
    readonly hit?: SearchHit;
}

/** Asks the server; resolves to the raw JSON result. */
export type SearchFunction = (query: string, topK: number, token: vscode.CancellationToken) => Promise<unknown>;

export const SEARCH_DEBOUNCE_MS = 200;

function isRecord(value: unknown): value is Record<string, unknown> {
    return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isPosition(value: unknown): value is LspPosition {
    return isRecord(value) && typeof value.line === 'number' && typeof value.character === 'number';
}

function isRange(value: unknown): value is LspRange {
    return isRecord(value) && isPosition(value.start) && isPosition(value.end);
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

/** The hits of a `memsearch/search` result; entries without a uri are dropped. */
export function parseHits(result: unknown): SearchHit[] {
    if (!Array.isArray(result)) {
        return [];
    }
    return result.filter(isRecord).flatMap((raw): SearchHit[] => {
        const uri = str(raw.uri);
        if (uri === '') {
            return [];
        }
        const range = isRange(raw.range) ? raw.range : undefined;
        return [
            {
                id: str(raw.id),
                source: str(raw.source),
                uri,
                heading: str(raw.heading),
                start_line: num(raw.start_line),
                end_line: num(raw.end_line),
                score: num(raw.score),
                snippet: str(raw.snippet),
                date: str(raw.date),
                ...(range ? { range } : {}),
                ...(raw.archived === true ? { archived: true } : {}),
            },
        ];
    });
}

/** Whitespace (newlines included) folded into single spaces; cut at `max` characters. */
export function oneLine(text: string, max = 200): string {
    const flat = text.replace(/\s+/g, ' ').trim();
    return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** heading as label; file, line and date as description; score, "archived" and snippet as detail. */
export function toItem(hit: SearchHit): SearchItem {
    const place = hit.start_line > 0 ? `${hit.source}:${hit.start_line}` : hit.source;
    return {
        label: hit.heading.trim() || hit.source || hit.uri,
        description: hit.date ? `${place} · ${hit.date}` : place,
        detail: `${hit.score.toFixed(2)} · ${hit.archived ? 'archived · ' : ''}${oneLine(hit.snippet)}`,
        // The server ranks; VS Code must not filter its results away by label.
        alwaysShow: true,
        hit,
    };
}

/** The editor range of a hit: its LSP range, else its 1-based inclusive lines. */
export function hitRange(hit: SearchHit): vscode.Range {
    if (hit.range) {
        const { start, end } = hit.range;
        return new vscode.Range(start.line, start.character, end.line, end.character);
    }
    const first = Math.max(hit.start_line - 1, 0);
    const last = Math.max(hit.end_line, first + 1);
    return new vscode.Range(first, 0, last, 0);
}

/** Open the hit's file with the chunk selected and in view. */
export async function openHit(hit: SearchHit): Promise<vscode.TextEditor> {
    const range = hitRange(hit);
    const editor = await vscode.window.showTextDocument(vscode.Uri.parse(hit.uri), { selection: range, preview: false });
    editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    return editor;
}

export interface PickerOptions {
    readonly topK: number;
    readonly debounceMs?: number;
    readonly initialValue?: string;
}

/** Show the picker; resolves to the chosen hit, or undefined when it is dismissed. */
export function pickSearchHit(search: SearchFunction, options: PickerOptions): Promise<SearchHit | undefined> {
    const picker = vscode.window.createQuickPick<SearchItem>();
    picker.title = 'Search memory';
    picker.placeholder = 'Words or a question: semantic + keyword search of the memory files';
    picker.matchOnDescription = true;
    picker.matchOnDetail = true;
    const debounceMs = options.debounceMs ?? SEARCH_DEBOUNCE_MS;

    let timer: ReturnType<typeof setTimeout> | undefined;
    let pending: vscode.CancellationTokenSource | undefined;
    let generation = 0;
    let lastQuery: string | undefined;

    const cancelPending = (): void => {
        if (timer !== undefined) {
            clearTimeout(timer);
            timer = undefined;
        }
        pending?.cancel();
        pending?.dispose();
        pending = undefined;
    };

    const run = async (query: string, current: number): Promise<void> => {
        const source = new vscode.CancellationTokenSource();
        pending = source;
        let items: SearchItem[];
        try {
            const hits = parseHits(await search(query, options.topK, source.token));
            items = hits.length > 0 ? hits.map(toItem) : [{ label: 'No matching memories', detail: `for "${query}"`, alwaysShow: true }];
        } catch (error) {
            const message = error instanceof Error ? error.message : String(error);
            items = [{ label: '$(error) Search failed', detail: message, alwaysShow: true }];
        }
        if (current !== generation) {
            return; // a later keystroke owns the picker now
        }
        picker.items = items;
        picker.busy = false;
    };

    const schedule = (value: string): void => {
        if (value === lastQuery) {
            return;
        }
        lastQuery = value;
        cancelPending();
        generation += 1;
        const current = generation;
        const query = value.trim();
        if (query === '') {
            picker.items = [];
            picker.busy = false;
            return;
        }
        picker.busy = true;
        timer = setTimeout(() => {
            timer = undefined;
            void run(query, current);
        }, debounceMs);
    };

    return new Promise((resolve) => {
        let chosen: SearchHit | undefined;
        picker.onDidChangeValue(schedule);
        picker.onDidAccept(() => {
            const hit = picker.selectedItems[0]?.hit;
            if (hit !== undefined) {
                chosen = hit;
                picker.hide();
            }
        });
        picker.onDidHide(() => {
            cancelPending();
            generation += 1;
            picker.dispose();
            resolve(chosen);
        });
        if (options.initialValue) {
            picker.value = options.initialValue;
        }
        picker.show();
        schedule(picker.value);
    });
}
