/** Names shared by the extension: ids, the settings section, the server's protocol names. */

/** Language client id: also the settings section and the `memsearch.trace.server` key. */
export const CLIENT_ID = 'memsearch';
export const CLIENT_NAME = 'Memsearch';
export const SETTINGS_SECTION = 'memsearch';

/** Python module and pip package of the server. */
export const SERVER_MODULE = 'memsearch_lsp';
export const PIP_PACKAGE = 'memsearch-lsp';

/**
 * The extension's own (UI) commands. They live in `memsearch.client.*` because
 * vscode-languageclient registers every command of the server's
 * `executeCommandProvider` (`memsearch.search`, `memsearch.reindex`, ...) as a VS Code
 * command itself, and `commands.registerCommand` throws on an id that already exists.
 */
export const Commands = {
    search: 'memsearch.client.search',
    openToday: 'memsearch.client.openToday',
    reindex: 'memsearch.client.reindex',
    compact: 'memsearch.client.compact',
    status: 'memsearch.client.status',
    restart: 'memsearch.client.restart',
    installServer: 'memsearch.client.installServer',
    init: 'memsearch.client.init',
    remember: 'memsearch.client.remember',
    copyMcpConfig: 'memsearch.client.copyMcpConfig',
} as const;

/** The walkthrough (package.json contributes.walkthroughs) and the context keys its steps complete on. */
export const WALKTHROUGH_ID = 'memsearch.gettingStarted';
export const Contexts = {
    serverInstalled: 'memsearch.serverInstalled',
    memoryWorkspace: 'memsearch.memoryWorkspace',
} as const;

/** Commands the server answers through `workspace/executeCommand` (docs/protocol.md). */
export const ServerCommands = {
    search: 'memsearch.search',
    expand: 'memsearch.expand',
    reindex: 'memsearch.reindex',
    compact: 'memsearch.compact',
    today: 'memsearch.today',
    status: 'memsearch.status',
} as const;

/** Custom request and notification of the server (docs/protocol.md). */
export const SEARCH_REQUEST = 'memsearch/search';
export const INDEXED_NOTIFICATION = 'memsearch/indexed';

/** Id of the MCP server definition provider (package.json contributes.mcpServerDefinitionProviders). */
export const MCP_PROVIDER_ID = 'memsearch.mcp';
