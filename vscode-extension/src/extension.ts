/** Entry point: wire the log, the status bar, the server and the commands together. */
import * as vscode from 'vscode';
import { registerCommands } from './common/commands';
import { CLIENT_NAME, SETTINGS_SECTION } from './common/constants';
import { registerLogger, traceError } from './common/log';
import { affectsMcp, mcpApi, registerMcpServers } from './common/mcp';
import { ServerManager } from './common/server';
import { needsRestart } from './common/settings';
import { IndexStatus } from './common/status';

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
    const channel = vscode.window.createOutputChannel(CLIENT_NAME, { log: true });
    const status = new IndexStatus(vscode.window.createStatusBarItem('memsearch.status', vscode.StatusBarAlignment.Left, 0));
    server = new ServerManager(channel, status);
    const manager = server;
    context.subscriptions.push(
        channel,
        registerLogger(channel),
        status,
        manager,
        ...registerCommands(manager, status),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (needsRestart(event)) {
                void manager.restart();
            }
        }),
    );
    const mcpChanged = new vscode.EventEmitter<void>();
    context.subscriptions.push(
        ...registerMcpServers(mcpApi(vscode), {
            folders: () => vscode.workspace.workspaceFolders ?? [],
            enabled: (folder) => vscode.workspace.getConfiguration(SETTINGS_SECTION, folder.uri).get<boolean>('mcp.enable', true),
            interpreter: () => manager.python(),
            version: (context.extension.packageJSON as { version?: string }).version ?? '',
        }, mcpChanged),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (affectsMcp(event)) {
                mcpChanged.fire();
            }
        }),
        vscode.workspace.onDidChangeWorkspaceFolders(() => {
            mcpChanged.fire();
        }),
    );
    manager.start().then(() => {
        mcpChanged.fire();
    }, (error: unknown) => {
        traceError('Starting the server:', error);
    });
}

export async function deactivate(): Promise<void> {
    await server?.stop();
    server = undefined;
}
