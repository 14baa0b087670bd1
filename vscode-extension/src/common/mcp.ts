/**
 * Offer `<python> -m memsearch_lsp mcp` to VS Code's agent mode (one MCP server per workspace
 * folder), with the Python the language server uses, while `memsearch.mcp.enable` is on.
 * The API exists from VS Code 1.101; older versions get nothing and no error.
 */
import type * as vscode from 'vscode';
import { MCP_PROVIDER_ID, SETTINGS_SECTION } from './constants';
import { traceInfo } from './log';
import { moduleCommand, PYTHON_ENV } from './python';

/** The parts of VS Code's MCP API used here (declared locally: @types/vscode follows engines.vscode). */
export interface McpStdioDefinition {
    readonly label: string;
    readonly command: string;
    readonly args: string[];
    readonly env: Record<string, string | number | null>;
    readonly version?: string;
    cwd?: vscode.Uri;
}

export interface McpProvider {
    readonly onDidChangeMcpServerDefinitions: vscode.Event<void>;
    provideMcpServerDefinitions(token?: vscode.CancellationToken): Promise<McpStdioDefinition[]>;
}

export interface McpApi {
    readonly McpStdioServerDefinition: new (
        label: string,
        command: string,
        args?: string[],
        env?: Record<string, string | number | null>,
        version?: string,
    ) => McpStdioDefinition;
    registerMcpServerDefinitionProvider(id: string, provider: McpProvider): Disposable;
}

interface Disposable {
    dispose(): unknown;
}

/** What fires `onDidChangeMcpServerDefinitions` (a vscode.EventEmitter). */
export interface ChangeEmitter extends Disposable {
    readonly event: vscode.Event<void>;
}

/** VS Code's MCP API, or undefined when this VS Code has none. */
export function mcpApi(host: unknown): McpApi | undefined {
    const api = host as { lm?: { registerMcpServerDefinitionProvider?: unknown }; McpStdioServerDefinition?: unknown };
    const register = api.lm?.registerMcpServerDefinitionProvider;
    if (typeof register !== 'function' || typeof api.McpStdioServerDefinition !== 'function') {
        return undefined;
    }
    return {
        McpStdioServerDefinition: api.McpStdioServerDefinition as McpApi['McpStdioServerDefinition'],
        registerMcpServerDefinitionProvider: (id, provider) => register.call(api.lm, id, provider) as Disposable,
    };
}

/** `<python> -m memsearch_lsp mcp --workspace <folder>` as (command, args). */
export function mcpCommand(interpreter: readonly string[], folder: string): { command: string; args: string[] } {
    return moduleCommand(interpreter, ['mcp', '--workspace', folder]);
}

export interface McpDeps {
    readonly folders: () => readonly vscode.WorkspaceFolder[];
    readonly enabled: (folder: vscode.WorkspaceFolder) => boolean;
    /** Only memory workspaces get a server (elsewhere `memsearch-lsp mcp` refuses to run). */
    readonly isMemoryWorkspace: (folder: vscode.WorkspaceFolder) => boolean;
    /** The Python that has memsearch_lsp (the language server's), or undefined when none was found. */
    readonly interpreter: (folder: vscode.WorkspaceFolder) => Promise<readonly string[] | undefined>;
    /** Can that Python import `mcp` (the `mcp` extra)? */
    readonly hasMcp: (interpreter: readonly string[]) => Promise<boolean>;
    readonly version: string;
}

/** `hasMcp` asked once per Python (the answer changes only with an install, which restarts the extension's server). */
export function cachedCheck(check: (interpreter: readonly string[]) => Promise<boolean>): {
    (interpreter: readonly string[]): Promise<boolean>;
    clear(): void;
} {
    const answers = new Map<string, Promise<boolean>>();
    const cached = (interpreter: readonly string[]): Promise<boolean> => {
        const key = interpreter.join('\0');
        let answer = answers.get(key);
        if (answer === undefined) {
            answer = check(interpreter);
            answers.set(key, answer);
        }
        return answer;
    };
    cached.clear = (): void => {
        answers.clear();
    };
    return cached;
}

/**
 * The provider: one stdio server per enabled memory-workspace folder, only when the server's Python
 * has the `mcp` extra; the emitter tells VS Code to ask again.
 */
export function createMcpProvider(api: McpApi, deps: McpDeps, emitter: ChangeEmitter): McpProvider {
    return {
        onDidChangeMcpServerDefinitions: emitter.event,
        async provideMcpServerDefinitions() {
            const definitions: McpStdioDefinition[] = [];
            for (const folder of deps.folders()) {
                if (!deps.enabled(folder) || !deps.isMemoryWorkspace(folder)) {
                    continue;
                }
                const interpreter = await deps.interpreter(folder);
                if (interpreter === undefined) {
                    continue;
                }
                if (!(await deps.hasMcp(interpreter))) {
                    traceInfo(`No MCP server for ${folder.name}: ${interpreter.join(' ')} cannot import mcp (pip install 'memsearch-lsp[mcp]').`);
                    continue;
                }
                const { command, args } = mcpCommand(interpreter, folder.uri.fsPath);
                const definition = new api.McpStdioServerDefinition(`Memsearch memory (${folder.name})`, command, args, { ...PYTHON_ENV }, deps.version);
                definition.cwd = folder.uri;
                definitions.push(definition);
            }
            return definitions;
        },
    };
}

/** Register the provider when VS Code has the API; the disposables end it. */
export function registerMcpServers(api: McpApi | undefined, deps: McpDeps, emitter: ChangeEmitter): Disposable[] {
    if (api === undefined) {
        traceInfo('This VS Code has no MCP server API (1.101+): memsearch is not offered to agent mode.');
        return [];
    }
    return [emitter, api.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, createMcpProvider(api, deps, emitter))];
}

/** The configuration changes after which VS Code should ask for the servers again. */
export function affectsMcp(event: { affectsConfiguration(section: string): boolean }): boolean {
    return ['mcp.enable', 'interpreter', 'memory.paths'].some((key) => event.affectsConfiguration(`${SETTINGS_SECTION}.${key}`));
}
