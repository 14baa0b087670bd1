/** The `memsearch.*` settings: the schema in package.json, and what the server receives. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import manifest from '../../package.json';
import { SETTINGS_SECTION } from './constants';

/** Settings only the client reads (memsearch_lsp.config.CLIENT_ONLY_SETTINGS); never sent. */
export const CLIENT_ONLY_SETTINGS: ReadonlySet<string> = new Set(['interpreter', 'trace.server', 'mcp.enable']);

/**
 * Settings that send the memory or a secret somewhere (memsearch_lsp/trust.py USER_ONLY_KEYS, and the keys of
 * USER_ONLY_VALUES): `machine` scope in package.json, and only the user's own (global) value is read, so a
 * cloned repository's `.vscode/settings.json` never sets them, not even on a VS Code that ignores the scope.
 */
export const USER_ONLY_SETTINGS: ReadonlySet<string> = new Set([
    'milvus.uri',
    'milvus.token',
    'milvus.collection',
    'compact.summarizer',
    'compact.baseUrl',
    'compact.apiKeyEnv',
    'compact.model',
    'embedding.provider',
    'embedding.baseUrl',
    'embedding.apiKeyEnv',
]);

/**
 * Settings naming a file or a folder the server reads (memsearch_lsp/trust.py WORKSPACE_PATH_KEYS): a workspace's
 * value is sent only when it stays inside the workspace folders it applies to (checked through links, as a
 * `.memsearch.toml` value is), else the user's own value is. The server cannot tell a workspace's value from the
 * user's (it receives one object), so this rule is the client's.
 */
export const WORKSPACE_PATH_SETTINGS: ReadonlySet<string> = new Set(['compact.promptFile', 'embedding.model']);

/**
 * Settings a workspace chooses only for a local model (memsearch_lsp/trust.py PROVIDER_BOUND_KEYS): with the user's
 * `openai` or `fastembed` provider, the model is what their endpoint charges for or what fastembed downloads, so
 * the user's own value is sent.
 */
export const PROVIDER_BOUND_SETTINGS: ReadonlySet<string> = new Set(['embedding.model', 'embedding.queryModel', 'embedding.dimensions']);
const LOCAL_PROVIDERS: ReadonlySet<unknown> = new Set([undefined, 'bundled', 'onnx']);

/** Settings whose change restarts the server: a new Python, or new folders to watch. */
export const RESTART_SETTINGS: readonly string[] = ['interpreter', 'memory.paths'];

export const DEFAULT_MEMORY_PATHS: readonly string[] = ['memory'];

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export interface NestedSettings {
    [key: string]: JsonValue;
}

interface ConfigurationContribution {
    properties?: Record<string, unknown>;
}
interface ExtensionManifest {
    contributes?: { configuration?: ConfigurationContribution | ConfigurationContribution[] };
}

/** Every `memsearch.*` setting of a manifest, without the prefix, e.g. `search.vectorWeight`. */
export function contributedSettingKeys(pkg: ExtensionManifest): string[] {
    const configuration = pkg.contributes?.configuration;
    const blocks = configuration === undefined ? [] : Array.isArray(configuration) ? configuration : [configuration];
    const prefix = `${SETTINGS_SECTION}.`;
    return blocks
        .flatMap((block) => Object.keys(block.properties ?? {}))
        .filter((key) => key.startsWith(prefix))
        .map((key) => key.slice(prefix.length));
}

/** The settings the server reads (memsearch_lsp.config.settings_keys()), from package.json. */
export const SERVER_SETTING_KEYS: readonly string[] = contributedSettingKeys(manifest).filter(
    (key) => !CLIENT_ONLY_SETTINGS.has(key),
);

/** The groups of server settings: `memory`, `search`, ... (the part before the dot). */
const SETTING_GROUPS: ReadonlySet<string> = new Set(
    SERVER_SETTING_KEYS.flatMap((key) => (key.includes('.') ? [key.slice(0, key.indexOf('.'))] : [])),
);

/** What `WorkspaceConfiguration.inspect` reports for one key (the parts used here). */
export interface SettingInspection {
    globalValue?: unknown;
    workspaceValue?: unknown;
    workspaceFolderValue?: unknown;
}

/** The slice of `WorkspaceConfiguration` that the mapping needs (tests pass a fake). */
export interface ConfigurationReader {
    inspect(key: string): SettingInspection | undefined;
}

/**
 * The value the user set for `key` (folder > workspace > user; the user's alone for USER_ONLY_SETTINGS, and for
 * WORKSPACE_PATH_SETTINGS when the workspace's points outside `folders`, and for PROVIDER_BOUND_SETTINGS with the
 * user's own provider not a local one), or undefined when it is only the default.
 * Defaults are not sent: the server owns them, and a default sent as a setting would hide the workspace's
 * `.memsearch.toml` and `MEMSEARCH_*` variables.
 */
export function explicitValue(reader: ConfigurationReader, key: string, folders: readonly string[] = []): JsonValue | undefined {
    const inspection = reader.inspect(key);
    if (inspection === undefined) {
        return undefined;
    }
    const workspace = inspection.workspaceFolderValue ?? inspection.workspaceValue;
    const trusted =
        workspace !== undefined &&
        !USER_ONLY_SETTINGS.has(key) &&
        (!PROVIDER_BOUND_SETTINGS.has(key) || LOCAL_PROVIDERS.has(reader.inspect('embedding.provider')?.globalValue)) &&
        (!WORKSPACE_PATH_SETTINGS.has(key) || folders.length > 0 && folders.every((folder) => insideFolder(workspace, folder)));
    const value = trusted ? workspace : inspection.globalValue;
    return value === undefined ? undefined : (value as JsonValue);
}

/**
 * Whether a path setting's `value` (relative to `folder`, absolute, or `~/...`) names a place inside `folder`, links
 * followed; a `..` part, or a link that leads nowhere, counts as outside. A value that is not a string names no path.
 */
export function insideFolder(value: unknown, folder: string, home: string = os.homedir()): boolean {
    if (typeof value !== 'string' || value === '') {
        return true;
    }
    const expanded = value === '~' || value.startsWith('~/') || value.startsWith('~\\') ? home + value.slice(1) : value;
    if (expanded.split(/[\\/]/).includes('..')) {
        return false;
    }
    const root = realPath(folder);
    const target = realPath(path.isAbsolute(expanded) ? expanded : path.join(folder, expanded));
    if (root === undefined || target === undefined) {
        return false;
    }
    const relative = path.relative(root, target);
    return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}

/** `target` with every link of its longest existing part followed (the rest as written); undefined: a dangling link. */
function realPath(target: string): string | undefined {
    const rest: string[] = [];
    let current = path.resolve(target);
    for (;;) {
        try {
            return path.join(fs.realpathSync.native(current), ...rest);
        } catch {
            try {
                fs.lstatSync(current);
                return undefined; // there, but not followed: a link that leads nowhere (yet)
            } catch {
                // not there: its parent
            }
        }
        const parent = path.dirname(current);
        if (parent === current) {
            return path.resolve(target);
        }
        rest.unshift(path.basename(current));
        current = parent;
    }
}

/** `[['search.topK', 5], ['showNotifications', false]]` -> `{search: {topK: 5}, showNotifications: false}`. */
export function nestSettings(entries: Iterable<readonly [string, JsonValue]>): NestedSettings {
    const root: NestedSettings = {};
    for (const [key, value] of entries) {
        const parts = key.split('.');
        const leaf = parts.pop();
        if (leaf === undefined || leaf === '') {
            continue;
        }
        let node = root;
        for (const part of parts) {
            const child = node[part];
            if (child === undefined || child === null || typeof child !== 'object' || Array.isArray(child)) {
                const created: NestedSettings = {};
                node[part] = created;
                node = created;
            } else {
                node = child;
            }
        }
        node[leaf] = value;
    }
    return root;
}

/** The nested settings object the server receives: the user's values for server keys only (`folders`: the
 * workspace folders they apply to, see explicitValue). */
export function serverSettings(
    reader: ConfigurationReader,
    keys: readonly string[] = SERVER_SETTING_KEYS,
    folders: readonly string[] = [],
): NestedSettings {
    const entries: [string, JsonValue][] = [];
    for (const key of keys) {
        const value = explicitValue(reader, key, folders);
        if (value !== undefined) {
            entries.push([key, value]);
        }
    }
    return nestSettings(entries);
}

/** The server settings for a folder (or the window, all its folders, when `resource` is undefined). */
export function getServerSettings(resource?: vscode.Uri): NestedSettings {
    const folders = resource === undefined ? (vscode.workspace.workspaceFolders ?? []) : [workspaceFolderFor(resource)];
    const paths = folders.flatMap((folder) => (folder === undefined ? [] : [folder.uri.fsPath]));
    return serverSettings(vscode.workspace.getConfiguration(SETTINGS_SECTION, resource), SERVER_SETTING_KEYS, paths);
}

/**
 * Which part of our settings a `workspace/configuration` item asks for: `''` for the
 * section `memsearch`, `'search'` for `memsearch.search`; undefined for another section.
 */
export function ownSettingsPath(section: string | null | undefined): string | undefined {
    if (section === SETTINGS_SECTION) {
        return '';
    }
    if (section?.startsWith(`${SETTINGS_SECTION}.`)) {
        return section.slice(SETTINGS_SECTION.length + 1);
    }
    return undefined;
}

/** A `workspace/configuration` item (LSP's `ConfigurationItem`). */
export interface ConfigurationItemLike {
    readonly section?: string | null;
    readonly scopeUri?: string | null;
}

/**
 * The answers to `workspace/configuration`: an item of our section gets the user's values (see explicitValue) of the
 * folder its `scopeUri` names (the server asks one item for the window, then one for each workspace folder, and
 * applies each folder's to that folder's memory), else of the window; an item of another section gets `others`'
 * answer at its index (VS Code's).
 */
export function configurationAnswers(items: readonly ConfigurationItemLike[], others: readonly unknown[] = []): unknown[] {
    return items.map((item, index) => {
        const settingsPath = ownSettingsPath(item.section);
        if (settingsPath === undefined) {
            return others[index] ?? null;
        }
        const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
        return settingsAt(getServerSettings(scope), settingsPath);
    });
}

/** The value at a dotted path of nested settings (`''` = all); null when unset. */
export function settingsAt(settings: NestedSettings, path: string): JsonValue {
    let node: JsonValue = settings;
    for (const part of path === '' ? [] : path.split('.')) {
        if (node === null || typeof node !== 'object' || Array.isArray(node)) {
            return null;
        }
        const next: JsonValue | undefined = node[part];
        if (next === undefined) {
            // An unset section reads as empty; an unset key as null ("not set").
            return SETTING_GROUPS.has(path) ? {} : null;
        }
        node = next;
    }
    return node;
}

export interface VariableValues {
    workspaceFolder?: string;
    userHome: string;
    env: Readonly<Record<string, string | undefined>>;
}

/** Expand `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`. */
export function resolveVariables(values: readonly string[], vars: VariableValues): string[] {
    return values.map((value) => {
        let out = value.replace(/\$\{(workspaceFolder|userHome|env:([^}]+))\}/g, (match, name: string, envName?: string) => {
            if (envName !== undefined) {
                return vars.env[envName] ?? '';
            }
            if (name === 'userHome') {
                return vars.userHome;
            }
            return vars.workspaceFolder ?? match;
        });
        if (out === '~' || out.startsWith('~/') || out.startsWith('~\\')) {
            out = vars.userHome + out.slice(1);
        }
        return out;
    });
}

/** `memsearch.interpreter` as a command line (empty when unset); a plain string is accepted too. */
export function interpreterFromSetting(value: unknown, vars: VariableValues): string[] {
    const parts = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
    const strings = parts.filter((part): part is string => typeof part === 'string' && part.trim() !== '');
    return resolveVariables(strings, vars);
}

/** The folder a command acts on: the active file's, the only one, or the one picked; none open: say so. */
export async function chooseFolder(what: string): Promise<vscode.WorkspaceFolder | undefined> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length === 0) {
        const open = 'Open Folder...';
        const choice = await vscode.window.showWarningMessage(`Memsearch: open a folder first; ${what}`, open);
        if (choice === open) {
            await vscode.commands.executeCommand('workbench.action.files.openFolder');
        }
        return undefined;
    }
    const active = vscode.window.activeTextEditor?.document.uri;
    const byEditor = active === undefined ? undefined : vscode.workspace.getWorkspaceFolder(active);
    if (byEditor !== undefined || folders.length === 1) {
        return byEditor ?? folders[0];
    }
    return vscode.window.showWorkspaceFolderPick({ placeHolder: `The folder: ${what}` });
}

export function workspaceFolderFor(resource?: vscode.Uri): vscode.WorkspaceFolder | undefined {
    const byResource = resource === undefined ? undefined : vscode.workspace.getWorkspaceFolder(resource);
    return byResource ?? vscode.workspace.workspaceFolders?.[0];
}

export function getInterpreterSetting(resource?: vscode.Uri): string[] {
    const config = vscode.workspace.getConfiguration(SETTINGS_SECTION, resource);
    return interpreterFromSetting(config.get<unknown>('interpreter'), {
        workspaceFolder: workspaceFolderFor(resource)?.uri.fsPath,
        userHome: os.homedir(),
        env: process.env,
    });
}

/** `memsearch.memory.paths` for a folder; the default when unset or empty. */
export function getMemoryPaths(resource?: vscode.Uri): string[] {
    const value = vscode.workspace.getConfiguration(SETTINGS_SECTION, resource).get<unknown>('memory.paths');
    const paths = Array.isArray(value) ? value.filter((p): p is string => typeof p === 'string' && p.trim() !== '') : [];
    return paths.length > 0 ? paths : [...DEFAULT_MEMORY_PATHS];
}

/** A glob for the Markdown files of one memory path: relative to the workspace folder, or absolute. */
export interface MemoryGlob {
    /** Absolute folder to watch; undefined: the workspace folder. */
    readonly base?: string;
    readonly pattern: string;
}

/** `memory` -> `memory/**\/*.md` under the workspace folder; `/abs/notes` -> `**\/*.md` under it. */
export function memoryGlobs(paths: readonly string[]): MemoryGlob[] {
    return paths.map((memoryPath) => {
        if (path.isAbsolute(memoryPath)) {
            return { base: memoryPath, pattern: '**/*.md' };
        }
        const parts = memoryPath.split(/[\\/]+/).filter((part) => part !== '' && part !== '.');
        return { pattern: parts.length > 0 ? `${parts.join('/')}/**/*.md` : '**/*.md' };
    });
}

/** A number setting for a folder, or `fallback` when unset or not a number. */
export function getNumberSetting(key: string, fallback: number, resource?: vscode.Uri): number {
    const value = vscode.workspace.getConfiguration(SETTINGS_SECTION, resource).get<unknown>(key);
    return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

export function getStringSetting(key: string, fallback: string, resource?: vscode.Uri): string {
    const value = vscode.workspace.getConfiguration(SETTINGS_SECTION, resource).get<unknown>(key);
    return typeof value === 'string' && value !== '' ? value : fallback;
}

/** Whether a configuration change needs a new server process (see RESTART_SETTINGS). */
export function needsRestart(event: { affectsConfiguration(section: string): boolean }): boolean {
    return RESTART_SETTINGS.some((key) => event.affectsConfiguration(`${SETTINGS_SECTION}.${key}`));
}
