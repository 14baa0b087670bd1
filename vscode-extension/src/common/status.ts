/** The status bar item: "indexing" while the server works, then the number of chunks indexed. */
import * as vscode from 'vscode';
import { Commands } from './constants';

/** Params of the `memsearch/indexed` notification (docs/protocol.md). */
export interface IndexedParams {
    readonly root: string;
    readonly files: number;
    readonly chunks: number;
    readonly embedded: number;
    readonly reused: number;
    readonly ms: number;
}

/** The values of `$/progress` for work-done progress (begin, report, end). */
export interface WorkDoneValue {
    readonly kind: 'begin' | 'report' | 'end';
    readonly title?: string;
    readonly message?: string;
    readonly percentage?: number;
}

export type Phase = 'starting' | 'running' | 'stopped' | 'not-installed' | 'error';

/** The slice of `vscode.StatusBarItem` used here (tests pass a plain object). */
export interface StatusItem {
    text: string;
    tooltip: string | vscode.MarkdownString | undefined;
    command: string | vscode.Command | undefined;
    name: string | undefined;
    backgroundColor: vscode.ThemeColor | undefined;
    show(): void;
    dispose(): void;
}

export interface StatusView {
    readonly text: string;
    readonly tooltip: string;
    readonly warning: boolean;
}

function isCount(value: unknown): value is number {
    return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/** The params of `memsearch/indexed` when they have the documented shape, else undefined. */
export function parseIndexed(params: unknown): IndexedParams | undefined {
    if (params === null || typeof params !== 'object') {
        return undefined;
    }
    const p = params as Record<string, unknown>;
    if (typeof p.root !== 'string' || !isCount(p.chunks)) {
        return undefined;
    }
    const count = (value: unknown): number => (isCount(value) ? value : 0);
    return { root: p.root, files: count(p.files), chunks: p.chunks, embedded: count(p.embedded), reused: count(p.reused), ms: count(p.ms) };
}

export function plural(count: number, noun: string): string {
    return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

export const INDEXING_TEXT = '$(sync~spin) memsearch: indexing';

/** What the item shows, from the phase, the open progress and the last pass of each root. */
export function renderStatus(
    phase: Phase,
    detail: string,
    progress: ReadonlyMap<string, WorkDoneValue>,
    roots: ReadonlyMap<string, IndexedParams>,
): StatusView {
    const footer = 'Click for the memsearch status.';
    switch (phase) {
        case 'not-installed':
            return { text: '$(warning) memsearch: not installed', tooltip: `${detail}\n\n${footer}`, warning: true };
        case 'stopped':
            return { text: '$(circle-slash) memsearch: stopped', tooltip: `${detail || 'The server is not running.'}\n\n${footer}`, warning: true };
        case 'error':
            return { text: '$(error) memsearch: error', tooltip: `${detail}\n\n${footer}`, warning: true };
        default:
            break;
    }
    if (progress.size > 0 || roots.size === 0) {
        const lines = [...progress.values()].map((value) => {
            const parts = [value.title, value.message].filter((part): part is string => !!part);
            const percent = value.percentage === undefined ? '' : ` (${Math.round(value.percentage)}%)`;
            return `${parts.join(': ') || 'Working'}${percent}`;
        });
        const tooltip = lines.length > 0 ? lines.join('\n') : phase === 'starting' ? 'Starting the server and indexing the memory files.' : 'Waiting for the first index pass.';
        return { text: INDEXING_TEXT, tooltip: `${tooltip}\n\n${footer}`, warning: false };
    }
    const all = [...roots.values()];
    const chunks = all.reduce((sum, root) => sum + root.chunks, 0);
    const lines = all.map(
        (root) =>
            `${root.root}: ${plural(root.files, 'file')}, ${plural(root.chunks, 'chunk')} ` +
            `(last pass: ${root.embedded} embedded, ${root.reused} reused, ${Math.round(root.ms)} ms)`,
    );
    return { text: `$(database) memsearch: ${plural(chunks, 'chunk')}`, tooltip: `${lines.join('\n')}\n\n${footer}`, warning: false };
}

/** Owns the status bar item; fed by the server's lifecycle, progress and `memsearch/indexed`. */
export class IndexStatus implements vscode.Disposable {
    private phase: Phase = 'starting';
    private detail = '';
    private readonly progress = new Map<string, WorkDoneValue>();
    private readonly roots = new Map<string, IndexedParams>();

    constructor(private readonly item: StatusItem) {
        item.name = 'Memsearch';
        item.command = Commands.status;
        this.render();
        item.show();
    }

    /** A (re)starting server: show "indexing" until its first `memsearch/indexed`. */
    starting(): void {
        this.phase = 'starting';
        this.detail = '';
        this.progress.clear();
        this.roots.clear();
        this.render();
    }

    running(): void {
        this.phase = 'running';
        this.detail = '';
        this.render();
    }

    stopped(phase: 'stopped' | 'not-installed' | 'error', detail: string): void {
        this.phase = phase;
        this.detail = detail;
        this.progress.clear();
        this.render();
    }

    /** One `$/progress` value of a work-done progress (begin, report or end). */
    onProgress(token: string | number, value: WorkDoneValue): void {
        const key = String(token);
        if (value.kind === 'end') {
            this.progress.delete(key);
        } else {
            const previous = this.progress.get(key);
            this.progress.set(key, { ...previous, ...value, title: value.title ?? previous?.title });
        }
        this.render();
    }

    /** The `memsearch/indexed` notification; params of another shape are ignored. */
    indexed(params: unknown): void {
        const parsed = parseIndexed(params);
        if (parsed === undefined) {
            return;
        }
        this.roots.set(parsed.root, parsed);
        if (this.phase === 'starting') {
            this.phase = 'running';
        }
        this.render();
    }

    get view(): StatusView {
        return renderStatus(this.phase, this.detail, this.progress, this.roots);
    }

    get indexedRoots(): readonly IndexedParams[] {
        return [...this.roots.values()];
    }

    private render(): void {
        const view = this.view;
        this.item.text = view.text;
        this.item.tooltip = view.tooltip;
        this.item.backgroundColor = view.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    }

    dispose(): void {
        this.item.dispose();
    }
}
