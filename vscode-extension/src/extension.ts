/** Entry point: wire the log, the status bar, the server, the commands and the first-run walkthrough together. */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { registerCommands } from './common/commands';
import { CLIENT_NAME, SETTINGS_SECTION, WALKTHROUGH_ID } from './common/constants';
import { hasModule, serverHome, WHEEL_FOLDER } from './common/install';
import { registerLogger, traceError } from './common/log';
import { affectsMcp, cachedCheck, mcpApi, registerMcpServers } from './common/mcp';
import { ServerManager } from './common/server';
import { needsRestart } from './common/settings';
import { registerSetupCommands, updateMemoryContext } from './common/setup';
import { IndexStatus } from './common/status';
import { isMemoryFolder } from './common/workspace';

const WALKTHROUGH_SHOWN = 'memsearch.walkthroughShown';

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
    const channel = vscode.window.createOutputChannel(CLIENT_NAME, { log: true });
    const status = new IndexStatus(vscode.window.createStatusBarItem('memsearch.status', vscode.StatusBarAlignment.Left, 0));
    const mcpChanged = new vscode.EventEmitter<void>();
    const hasMcp = cachedCheck((python) => hasModule(python, 'mcp'));
    server = new ServerManager(channel, status, serverHome(context.globalStorageUri.fsPath), path.join(context.extensionPath, WHEEL_FOLDER), () => {
        hasMcp.clear();
        mcpChanged.fire();
    });
    const manager = server;
    context.subscriptions.push(
        channel,
        registerLogger(channel),
        status,
        manager,
        ...registerCommands(manager, status),
        ...registerSetupCommands(manager),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (needsRestart(event)) {
                void manager.restart();
            }
        }),
    );
    context.subscriptions.push(
        ...registerMcpServers(mcpApi(vscode), {
            folders: () => vscode.workspace.workspaceFolders ?? [],
            enabled: (folder) => vscode.workspace.getConfiguration(SETTINGS_SECTION, folder.uri).get<boolean>('mcp.enable', true),
            isMemoryWorkspace: isMemoryFolder,
            interpreter: () => Promise.resolve(manager.currentServerPython),
            hasMcp,
            version: (context.extension.packageJSON as { version?: string }).version ?? '',
        }, mcpChanged),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (affectsMcp(event)) {
                mcpChanged.fire();
            }
        }),
        vscode.workspace.onDidChangeWorkspaceFolders(() => {
            updateMemoryContext();
            mcpChanged.fire();
        }),
    );
    updateMemoryContext();
    // First run: show the walkthrough once (install the server, initialize memory, search, remember, ...).
    if (!context.globalState.get<boolean>(WALKTHROUGH_SHOWN, false)) {
        void context.globalState.update(WALKTHROUGH_SHOWN, true);
        void vscode.commands.executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#${WALKTHROUGH_ID}`, false);
    }
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
