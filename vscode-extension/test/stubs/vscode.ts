/**
 * A small stand-in for the `vscode` module, enough for the unit tests (esbuild aliases
 * `vscode` to this file when it bundles test/). `stub` lets a test set settings, answer
 * messages and look at what the code showed.
 */
import * as fs from 'node:fs/promises';
import * as nodePath from 'node:path';
import type * as vscode from 'vscode';
import manifest from '../../package.json';

// --- Basic types -----------------------------------------------------------------------------

export class Uri {
    private constructor(
        readonly scheme: string,
        readonly path: string,
    ) {}

    static file(fsPath: string): Uri {
        return new Uri('file', nodePath.resolve(fsPath).split(nodePath.sep).join('/'));
    }

    static parse(value: string): Uri {
        const url = new URL(value);
        return new Uri(url.protocol.replace(/:$/, ''), decodeURIComponent(url.pathname));
    }

    static joinPath(base: Uri, ...segments: string[]): Uri {
        return new Uri(base.scheme, nodePath.posix.join(base.path, ...segments));
    }

    get fsPath(): string {
        return nodePath.normalize(this.path);
    }

    toString(): string {
        return `${this.scheme}://${encodeURI(this.path)}`;
    }
}

/** The stub's Uri where the code under test is typed with VS Code's. */
export function vsUri(uri: Uri): vscode.Uri {
    return uri as unknown as vscode.Uri;
}

export class Position {
    constructor(
        readonly line: number,
        readonly character: number,
    ) {}
}

export class Range {
    readonly start: Position;
    readonly end: Position;
    constructor(startLine: number | Position, startCharacter: number | Position, endLine?: number, endCharacter?: number) {
        if (startLine instanceof Position && startCharacter instanceof Position) {
            this.start = startLine;
            this.end = startCharacter;
        } else {
            this.start = new Position(startLine as number, startCharacter as number);
            this.end = new Position(endLine ?? 0, endCharacter ?? 0);
        }
    }
    get isEmpty(): boolean {
        return this.start.line === this.end.line && this.start.character === this.end.character;
    }
}

export class Selection extends Range {}

export class ThemeColor {
    constructor(readonly id: string) {}
}

export class RelativePattern {
    constructor(
        readonly base: unknown,
        readonly pattern: string,
    ) {}
}

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
    private listeners: Listener<T>[] = [];
    readonly event = (listener: Listener<T>): { dispose(): void } => {
        this.listeners.push(listener);
        return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
    };
    fire(value: T): void {
        for (const listener of [...this.listeners]) {
            listener(value);
        }
    }
    dispose(): void {
        this.listeners = [];
    }
}

export class CancellationTokenSource {
    private readonly emitter = new EventEmitter<undefined>();
    readonly token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
    cancel(): void {
        if (!this.token.isCancellationRequested) {
            this.token.isCancellationRequested = true;
            this.emitter.fire(undefined);
        }
    }
    dispose(): void {
        this.emitter.dispose();
    }
}

export enum ProgressLocation {
    SourceControl = 1,
    Window = 10,
    Notification = 15,
}
export enum TextEditorRevealType {
    Default = 0,
    InCenter = 1,
    InCenterIfOutsideViewport = 2,
    AtTop = 3,
}
export enum StatusBarAlignment {
    Left = 1,
    Right = 2,
}

// --- Recording state for tests ---------------------------------------------------------------

interface SettingValues {
    globalValue?: unknown;
    workspaceValue?: unknown;
    workspaceFolderValue?: unknown;
}

export interface ShownMessage {
    readonly level: 'error' | 'warning' | 'info';
    readonly message: string;
    readonly items: string[];
}

export interface QuickPickItemLike {
    label: string;
    description?: string;
    detail?: string;
    alwaysShow?: boolean;
}

export class FakeQuickPick<T extends QuickPickItemLike> {
    title = '';
    placeholder = '';
    value = '';
    busy = false;
    matchOnDescription = false;
    matchOnDetail = false;
    items: readonly T[] = [];
    selectedItems: readonly T[] = [];
    visible = false;
    disposed = false;
    private readonly changeValue = new EventEmitter<string>();
    private readonly accept = new EventEmitter<undefined>();
    private readonly hideEmitter = new EventEmitter<undefined>();
    readonly onDidChangeValue = this.changeValue.event;
    readonly onDidAccept = this.accept.event;
    readonly onDidHide = this.hideEmitter.event;

    show(): void {
        this.visible = true;
    }
    hide(): void {
        if (this.visible) {
            this.visible = false;
            this.hideEmitter.fire(undefined);
        }
    }
    dispose(): void {
        this.disposed = true;
    }
    /** Test helper: the user types `value`. */
    type(value: string): void {
        this.value = value;
        this.changeValue.fire(value);
    }
    /** Test helper: the user picks `item`. */
    pick(item: T): void {
        this.selectedItems = [item];
        this.accept.fire(undefined);
    }
}

export interface FakeDocument {
    readonly uri: Uri;
    readonly lineCount: number;
    lineAt(line: number): { range: Range };
    getText(range?: Range): string;
}

export interface ShownDocument {
    readonly uri: Uri;
    readonly options: { selection?: Range; preview?: boolean } | undefined;
}

export interface FakeExtension {
    isActive: boolean;
    exports: unknown;
    activate(): Promise<unknown>;
}

export const stub = {
    settings: new Map<string, SettingValues>(),
    /** The values one workspace folder's settings set (its `.vscode/settings.json`), by the folder's path. */
    folderSettings: new Map<string, Map<string, unknown>>(),
    messages: [] as ShownMessage[],
    /** Answers of the next show*Message calls, first in first out (undefined: dismissed). */
    answers: [] as (string | undefined)[],
    quickPicks: [] as FakeQuickPick<QuickPickItemLike>[],
    shown: [] as ShownDocument[],
    commands: new Map<string, (...args: unknown[]) => unknown>(),
    executed: [] as { command: string; args: unknown[] }[],
    extensions: new Map<string, FakeExtension>(),
    clipboard: '',
    /** Answers of the next showInputBox calls (undefined: dismissed), and what each box saw. */
    inputs: [] as (string | undefined)[],
    inputBoxes: [] as { answer: string | undefined; validation: string | undefined }[],
    progress: [] as unknown[],
    workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
    activeTextEditor: undefined as unknown,
    reset(): void {
        this.settings.clear();
        this.folderSettings.clear();
        this.messages = [];
        this.answers = [];
        this.quickPicks = [];
        this.shown = [];
        this.commands.clear();
        this.executed = [];
        this.extensions.clear();
        this.clipboard = '';
        this.inputs = [];
        this.inputBoxes = [];
        this.progress = [];
        this.workspaceFolders = undefined;
        this.activeTextEditor = undefined;
    },
    /** Set `key` (e.g. `memsearch.search.topK`) at one level. */
    set(key: string, value: unknown, level: keyof SettingValues = 'globalValue'): void {
        this.settings.set(key, { ...this.settings.get(key), [level]: value });
    },
    /** Set `key` in the settings of the workspace folder `folder` only: read with a resource inside it. */
    setForFolder(folder: Uri, key: string, value: unknown): void {
        this.folderSettings.set(folder.path, (this.folderSettings.get(folder.path) ?? new Map<string, unknown>()).set(key, value));
    },
};

// --- Namespaces --------------------------------------------------------------------------------

const defaults = new Map<string, unknown>();
for (const block of manifest.contributes.configuration) {
    for (const [key, schema] of Object.entries(block.properties)) {
        defaults.set(key, (schema as { default?: unknown }).default);
    }
}

function configuration(section?: string, resource?: Uri) {
    const full = (key: string): string => (section ? `${section}.${key}` : key);
    const folder = resource === undefined ? undefined : workspace.getWorkspaceFolder(resource);
    // (read with a resource in a folder: that folder's own values are its workspaceFolderValue)
    const valuesOf = (key: string): SettingValues | undefined => {
        const own = folder === undefined ? undefined : stub.folderSettings.get(folder.uri.path)?.get(full(key));
        const shared = stub.settings.get(full(key));
        return own === undefined ? shared : { ...shared, workspaceFolderValue: own };
    };
    return {
        get<T>(key: string, fallback?: T): T | undefined {
            const values = valuesOf(key);
            const value = values?.workspaceFolderValue ?? values?.workspaceValue ?? values?.globalValue ?? defaults.get(full(key));
            return (value ?? fallback) as T | undefined;
        },
        inspect(key: string) {
            const values = valuesOf(key);
            if (!defaults.has(full(key)) && values === undefined) {
                return undefined;
            }
            return { key: full(key), defaultValue: defaults.get(full(key)), ...values };
        },
        has(key: string): boolean {
            return defaults.has(full(key)) || valuesOf(key) !== undefined;
        },
    };
}

async function openDocument(uri: Uri): Promise<FakeDocument> {
    const text = await fs.readFile(uri.fsPath, 'utf8');
    const lines = text.split('\n');
    return {
        uri,
        lineCount: lines.length,
        lineAt: (line: number) => ({ range: new Range(line, 0, line, lines[line]?.length ?? 0) }),
        getText: () => text,
    };
}

function message(level: ShownMessage['level']) {
    return (text: string, ...rest: unknown[]): Promise<string | undefined> => {
        const items = rest.filter((item): item is string => typeof item === 'string');
        stub.messages.push({ level, message: text, items });
        return Promise.resolve(stub.answers.shift());
    };
}

export const window = {
    get activeTextEditor(): unknown {
        return stub.activeTextEditor;
    },
    showErrorMessage: message('error'),
    showWarningMessage: message('warning'),
    showInformationMessage: message('info'),
    createQuickPick<T extends QuickPickItemLike>(): FakeQuickPick<T> {
        const picker = new FakeQuickPick<T>();
        stub.quickPicks.push(picker);
        return picker;
    },
    async showTextDocument(target: Uri | FakeDocument, options?: ShownDocument['options']) {
        const uri = target instanceof Uri ? target : target.uri;
        stub.shown.push({ uri, options });
        const revealed: Range[] = [];
        return { document: target instanceof Uri ? undefined : target, selection: options?.selection, revealed, revealRange: (range: Range) => revealed.push(range) };
    },
    withProgress<R>(_options: unknown, task: (progress: { report(value: unknown): void }, token: CancellationTokenSource['token']) => Promise<R>): Promise<R> {
        return task({ report: (value: unknown) => stub.progress.push(value) }, new CancellationTokenSource().token);
    },
    async showInputBox(options?: { validateInput?: (value: string) => string | undefined }): Promise<string | undefined> {
        const answer = stub.inputs.shift();
        stub.inputBoxes.push({ answer, validation: answer === undefined ? undefined : options?.validateInput?.(answer) });
        return answer;
    },
    async showWorkspaceFolderPick(): Promise<unknown> {
        return stub.workspaceFolders?.[0];
    },
    createStatusBarItem() {
        return { text: '', tooltip: undefined, command: undefined, name: undefined, backgroundColor: undefined, show() {}, dispose() {} };
    },
};

export const workspace = {
    get workspaceFolders() {
        return stub.workspaceFolders;
    },
    getWorkspaceFolder(uri: Uri) {
        return stub.workspaceFolders?.find((folder) => uri.path === folder.uri.path || uri.path.startsWith(`${folder.uri.path}/`));
    },
    getConfiguration: configuration,
    openTextDocument: openDocument,
    fs: {
        async stat(uri: Uri) {
            return fs.stat(uri.fsPath);
        },
        async createDirectory(uri: Uri) {
            await fs.mkdir(uri.fsPath, { recursive: true });
        },
        async writeFile(uri: Uri, content: Uint8Array) {
            await fs.writeFile(uri.fsPath, content);
        },
    },
};

export const commands = {
    registerCommand(id: string, handler: (...args: unknown[]) => unknown) {
        if (stub.commands.has(id)) {
            throw new Error(`command '${id}' already exists`);
        }
        stub.commands.set(id, handler);
        return { dispose: () => stub.commands.delete(id) };
    },
    async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
        stub.executed.push({ command, args });
        return stub.commands.get(command)?.(...args);
    },
};

export const extensions = {
    getExtension(id: string): FakeExtension | undefined {
        return stub.extensions.get(id);
    },
};

export const env = {
    clipboard: {
        async writeText(text: string): Promise<void> {
            stub.clipboard = text;
        },
    },
};
