/** Entry point: wire the log, the status bar, the server and the commands together. */
import * as vscode from 'vscode';
import { registerCommands } from './common/commands';
import { CLIENT_NAME } from './common/constants';
import { registerLogger, traceError } from './common/log';
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
    manager.start().catch((error: unknown) => {
        traceError('Starting the server:', error);
    });
}

export async function deactivate(): Promise<void> {
    await server?.stop();
    server = undefined;
}
