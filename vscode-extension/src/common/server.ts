/** The language client: start `<python> -m memsearch_lsp serve`, restart it, talk to it. */
import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    ExecuteCommandRequest,
    LanguageClient,
    RevealOutputChannelOn,
    State,
    type LanguageClientOptions,
    type Middleware,
    type ServerOptions,
} from 'vscode-languageclient/node';
import type { ServerControl } from './commands';
import { CLIENT_ID, CLIENT_NAME, Contexts, INDEXED_NOTIFICATION, PIP_PACKAGE, SETTINGS_SECTION } from './constants';
import { showLog, traceError, traceInfo } from './log';
import {
    checkServerModule,
    findInterpreter,
    getPythonEnvironments,
    defaultPython,
    installedServerPythons,
    installCommand,
    missingServerMessage,
    notInstalledMessage,
    type ModuleCheck,
    PYTHON_ENV,
    runProcess,
    serverCommand,
    serverSourceKind,
    unsupportedPlatform,
    type Interpreter,
    type PythonEnvironmentsApi,
} from './python';
import { carriedWheel, installState, type ServerHome } from './install';
import { INSTALL_SERVER, installWithProgress, updateMemoryContext, type SetupHost } from './setup';
import { configurationAnswers, getInterpreterSetting, getMemoryPaths, getServerSettings, memoryGlobs, ownSettingsPath } from './settings';
import type { IndexStatus } from './status';

function readText(file: string): string | undefined {
    try {
        return readFileSync(file, 'utf8');
    } catch {
        return undefined;
    }
}

/**
 * Until memsearch-lsp is on PyPI, it installs from a checkout or a wheel: use the open workspace
 * folder when it is a checkout, else ask for one, then copy `<python> -m pip install <it>`.
 */
async function copyInstallCommand(interpreter: Interpreter): Promise<void> {
    let source = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath).find((p) => serverSourceKind(p, readText) === 'checkout');
    if (source === undefined) {
        const picked = await vscode.window.showOpenDialog({
            canSelectFiles: true,
            canSelectFolders: true,
            canSelectMany: false,
            openLabel: 'Install from here',
            title: 'The memsearch-lsp checkout (folder) or wheel (.whl) to install the server from',
        });
        source = picked?.[0]?.fsPath;
        if (source === undefined) {
            return;
        }
        if (serverSourceKind(source, readText) === undefined) {
            void vscode.window.showErrorMessage(`Memsearch: ${source} is neither a memsearch-lsp checkout (its pyproject.toml) nor a memsearch_lsp wheel.`);
            return;
        }
    }
    const command = installCommand(interpreter.command, source);
    await vscode.env.clipboard.writeText(command);
    void vscode.window.showInformationMessage(`Memsearch: copied \`${command}\`. Run it in a terminal, then "Memsearch: Restart server".`);
}

function createWatchers(): vscode.FileSystemWatcher[] {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length === 0) {
        return [vscode.workspace.createFileSystemWatcher('**/memory/**/*.md')];
    }
    return folders.flatMap((folder) =>
        memoryGlobs(getMemoryPaths(folder.uri)).map((glob) =>
            vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(glob.base !== undefined ? vscode.Uri.file(glob.base) : folder, glob.pattern)),
        ),
    );
}

export class ServerManager implements ServerControl, SetupHost, vscode.Disposable {
    private client: LanguageClient | undefined;
    private clientDisposables: { dispose(): unknown }[] = [];
    private interpreter: Interpreter | undefined;
    /** The Python that has memsearch_lsp (undefined until one is found). */
    private serverInterpreter: readonly string[] | undefined;
    private version: string | undefined;
    private lastProblem = '';
    private queue: Promise<void> = Promise.resolve();
    private environmentsListener: { dispose(): unknown } | undefined;

    constructor(
        private readonly channel: vscode.LogOutputChannel,
        private readonly status: IndexStatus,
        /** Where the private server lives (serverHome of the extension's global storage). */
        private readonly home: ServerHome,
        /** The extension's folder of the carried wheel. */
        private readonly wheelFolder: string,
        /** Called each time a server Python is found (the MCP provider asks again). */
        private readonly onDidFindServer: () => void = () => undefined,
    ) {}

    get isRunning(): boolean {
        return this.client?.state === State.Running;
    }

    /** Waits (a minute at most) for the start or restart in progress; true when the server runs then. */
    async started(waitMs = 60_000): Promise<boolean> {
        if (!this.isRunning) {
            let timer: NodeJS.Timeout | undefined;
            const timeout = new Promise<void>((resolve) => {
                timer = setTimeout(resolve, waitMs);
            });
            await Promise.race([this.queue, timeout]);
            clearTimeout(timer);
        }
        return this.isRunning;
    }

    /** Start, stop and restart run one at a time, in call order. */
    private enqueue(task: () => Promise<void>): Promise<void> {
        const next = this.queue.then(task, task);
        this.queue = next.catch((error: unknown) => {
            traceError('Server lifecycle:', error);
        });
        return this.queue;
    }

    start(): Promise<void> {
        return this.enqueue(() => this.doStart());
    }

    stop(): Promise<void> {
        return this.enqueue(() => this.doStop());
    }

    restart(): Promise<void> {
        return this.enqueue(async () => {
            await this.doStop();
            await this.doStart();
        });
    }

    async request(method: string, params: unknown, token?: vscode.CancellationToken): Promise<unknown> {
        const client = this.runningClient();
        return client.sendRequest<unknown>(method, params, token);
    }

    async executeCommand(command: string, args: readonly unknown[]): Promise<unknown> {
        const client = this.runningClient();
        return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [...args] });
    }

    describe(): string[] {
        const state = this.client === undefined ? 'not started' : State[this.client.state].toLowerCase();
        const lines = [
            `server: ${state}${this.lastProblem ? ` (${this.lastProblem})` : ''}`,
            `python: ${this.interpreter ? `${this.interpreter.command.join(' ')} (from ${this.interpreter.source})` : 'not chosen yet'}`,
        ];
        if (this.version !== undefined) {
            lines.push(`memsearch_lsp version: ${this.version}`);
        }
        return lines;
    }

    /** A Python to build the private venv with: the one the server would use, else the Python extension's. */
    async python(): Promise<readonly string[] | undefined> {
        if (this.interpreter !== undefined && this.interpreter.source !== 'private') {
            return this.interpreter.command;
        }
        const folder = vscode.workspace.workspaceFolders?.[0];
        const found = await findInterpreter([], await getPythonEnvironments(), folder?.uri);
        return found.source === 'python-extension' ? found.command : undefined;
    }

    private runningClient(): LanguageClient {
        if (this.client === undefined || this.client.state !== State.Running) {
            throw new Error('the memsearch language server is not running');
        }
        return this.client;
    }

    private async doStart(): Promise<void> {
        this.status.starting();
        this.lastProblem = '';
        this.serverInterpreter = undefined;
        const unsupported = unsupportedPlatform();
        if (unsupported !== undefined) {
            this.lastProblem = 'unsupported platform';
            traceError(unsupported);
            this.status.stopped('error', unsupported);
            void vscode.window.showErrorMessage(unsupported);
            return;
        }
        const folder = vscode.workspace.workspaceFolders?.[0];
        const environments = await getPythonEnvironments();
        this.watchEnvironments(environments);
        const located = await this.locate(getInterpreterSetting(folder?.uri), environments, folder);
        if (located === undefined) {
            return;
        }
        const { interpreter, version } = located;
        this.interpreter = interpreter;
        this.serverInterpreter = interpreter.command;
        this.version = version;
        traceInfo(`Python: ${interpreter.command.join(' ')} (from ${interpreter.source}); memsearch_lsp ${version}`);
        void vscode.commands.executeCommand('setContext', Contexts.serverInstalled, true);
        this.onDidFindServer();

        const client = this.createClient(interpreter, folder?.uri.fsPath);
        this.client = client;
        try {
            await client.start();
        } catch (error) {
            this.lastProblem = 'failed to start';
            traceError('The language server failed to start:', error);
            this.status.stopped('error', `The server failed to start: ${error instanceof Error ? error.message : String(error)}`);
        }
    }

    /**
     * The Python that has memsearch_lsp: the setting (when set, it alone); else the Python
     * extension's environment or `python3` on PATH when one has it; else the private venv (upgraded
     * first when the extension carries a newer wheel); else nothing, and the install is offered.
     */
    private async locate(
        setting: readonly string[],
        environments: PythonEnvironmentsApi | undefined,
        folder: vscode.WorkspaceFolder | undefined,
    ): Promise<{ interpreter: Interpreter; version: string } | undefined> {
        const cwd = folder?.uri.fsPath;
        const first = await findInterpreter(setting, environments, folder?.uri);
        this.interpreter = first;
        const candidates: Interpreter[] = [first];
        if (first.source === 'python-extension') {
            candidates.push({ command: [defaultPython()], source: 'path' });
        }
        if (first.source !== 'setting') {
            // a server installed as a command: `pipx install .` (README), or a venv's memsearch-lsp on PATH
            candidates.push(...installedServerPythons().map((python): Interpreter => ({ command: [python], source: 'installed' })));
        }
        const failures: { interpreter: Interpreter; check: Exclude<ModuleCheck, { ok: true }> }[] = [];
        for (const interpreter of candidates) {
            const check = await checkServerModule(interpreter.command, runProcess, cwd);
            if (check.ok) {
                return { interpreter, version: check.version };
            }
            traceInfo(`No memsearch_lsp in ${interpreter.command.join(' ')} (from ${interpreter.source}): ${check.detail}`);
            failures.push({ interpreter, check });
            if (interpreter.source === 'setting') {
                const message = missingServerMessage(interpreter, check);
                this.lastProblem = check.reason === 'python-not-found' ? 'Python not found' : `${PIP_PACKAGE} not installed`;
                traceError(message, check.detail);
                this.status.stopped('not-installed', message);
                void this.offerFix(message, interpreter);
                return undefined;
            }
        }
        let state = installState(this.home, carriedWheel(this.wheelFolder));
        if (state.kind === 'outdated') {
            traceInfo(`The extension carries memsearch-lsp ${state.carried.version} (installed: ${state.record.version}); upgrading the private server.`);
            const upgraded = await this.runInstall(`Memsearch: upgrading the server to ${state.carried.version}`);
            state = upgraded ? installState(this.home, carriedWheel(this.wheelFolder)) : state;
        }
        if (state.kind !== 'missing') {
            const interpreter: Interpreter = { command: [state.python], source: 'private' };
            const check = await checkServerModule(interpreter.command, runProcess, cwd);
            if (check.ok) {
                return { interpreter, version: check.version };
            }
            traceError(`The private server in ${this.home.venv} does not import: ${check.detail}`);
        }
        const message = notInstalledMessage(failures.map((f) => f.interpreter));
        this.lastProblem = `${PIP_PACKAGE} not installed`;
        traceError(message);
        this.status.stopped('not-installed', message);
        void this.offerInstall(message);
        return undefined;
    }

    /** Run the install with progress (inside the lifecycle queue); true when it succeeded. */
    private async runInstall(title: string): Promise<boolean> {
        const python = await this.python();
        const installed = await installWithProgress(this.home, this.wheelFolder, python === undefined ? [] : [python], title);
        return installed !== undefined;
    }

    /** "Install the memsearch-lsp server": stop, install (or upgrade) the private server, start. */
    install(): Promise<void> {
        return this.enqueue(async () => {
            await this.doStop();
            this.status.starting();
            if (await this.runInstall('Memsearch: installing the memsearch-lsp server')) {
                await this.doStart();
            } else {
                this.status.stopped('not-installed', 'The install did not finish; see the Memsearch output.');
            }
        });
    }

    /** The Python that has memsearch_lsp, as found by the last start (undefined: none yet). */
    get currentServerPython(): readonly string[] | undefined {
        return this.serverInterpreter;
    }

    /** A folder became a memory workspace: the walkthrough's context key, the MCP servers. */
    memoryChanged(): void {
        updateMemoryContext();
        this.onDidFindServer();
    }

    /** The Python that has memsearch_lsp once the server has been found; waits for a start in progress. */
    async serverPython(): Promise<readonly string[] | undefined> {
        await this.queue;
        return this.serverInterpreter;
    }

    private async offerInstall(message: string): Promise<void> {
        const settings = 'Set memsearch.interpreter';
        const choice = await vscode.window.showErrorMessage(message, INSTALL_SERVER, settings, 'Show output');
        if (choice === INSTALL_SERVER) {
            await this.install();
        } else if (choice === settings) {
            await vscode.commands.executeCommand('workbench.action.openSettings', `${SETTINGS_SECTION}.interpreter`);
        } else if (choice === 'Show output') {
            showLog();
        }
    }

    private async doStop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        for (const disposable of this.clientDisposables) {
            disposable.dispose();
        }
        this.clientDisposables = [];
        if (client === undefined) {
            return;
        }
        try {
            await client.dispose(2000);
        } catch (error) {
            traceError('Stopping the language server:', error);
        }
    }

    private createClient(interpreter: Interpreter, cwd: string | undefined): LanguageClient {
        const { command, args } = serverCommand(interpreter.command);
        const serverOptions: ServerOptions = { command, args, options: { cwd, env: { ...process.env, ...PYTHON_ENV } } };
        const watchers = createWatchers();

        const middleware: Middleware = {
            workspace: {
                // Answer `workspace/configuration` for our section with the user's values only
                // (see settings.explicitValue); other sections get VS Code's answer.
                configuration: async (params, token, next) => {
                    let fallback: unknown[] = [];
                    if (params.items.some((item) => ownSettingsPath(item.section) === undefined)) {
                        const result: unknown = await next(params, token);
                        if (!Array.isArray(result)) {
                            return result as never;
                        }
                        fallback = result;
                    }
                    return configurationAnswers(params.items, fallback);
                },
                // A server that registers for didChangeConfiguration itself gets our section as
                // the nested object of the user's values too (not VS Code's defaults).
                didChangeConfiguration: async (sections, next) => {
                    if (sections?.includes(SETTINGS_SECTION)) {
                        await this.sendSettings(client);
                        const others = sections.filter((section) => section !== SETTINGS_SECTION);
                        if (others.length > 0) {
                            await next(others);
                        }
                        return;
                    }
                    await next(sections);
                },
            },
            handleWorkDoneProgress: (token, params, next) => {
                this.status.onProgress(token, params);
                next(token, params);
            },
        };

        const clientOptions: LanguageClientOptions = {
            documentSelector: [{ scheme: 'file', language: 'markdown' }],
            // Settings changes are pushed by sendSettings (configurationSection is deprecated).
            synchronize: { fileEvents: watchers },
            initializationOptions: () => getServerSettings(),
            outputChannel: this.channel,
            traceOutputChannel: this.channel,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            middleware,
        };
        const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
        this.clientDisposables = [
            ...watchers,
            client.onNotification(INDEXED_NOTIFICATION, (params: unknown) => {
                this.status.indexed(params);
            }),
            vscode.workspace.onDidChangeConfiguration((event) => {
                if (event.affectsConfiguration(SETTINGS_SECTION) && client.state === State.Running) {
                    void this.sendSettings(client);
                }
            }),
            client.onDidChangeState((event) => {
                if (event.newState === State.Starting) {
                    this.status.starting();
                } else if (event.newState === State.Running) {
                    this.status.running();
                } else if (this.client === client) {
                    this.lastProblem = 'stopped';
                    this.status.stopped('stopped', 'The server stopped. See the Memsearch output; "Memsearch: Restart server" starts it again.');
                }
            }),
        ];
        return client;
    }

    /** `workspace/didChangeConfiguration` with `{settings: {memsearch: <the user's values, nested>}}`. */
    private async sendSettings(client: LanguageClient): Promise<void> {
        try {
            await client.sendNotification(DidChangeConfigurationNotification.type, {
                settings: { [SETTINGS_SECTION]: getServerSettings() },
            });
        } catch (error) {
            traceError('Sending the settings:', error);
        }
    }

    /** A new active environment in the Python extension: restart unless memsearch.interpreter is set. */
    private watchEnvironments(environments: PythonEnvironmentsApi | undefined): void {
        if (environments === undefined || this.environmentsListener !== undefined) {
            return;
        }
        this.environmentsListener = environments.onDidChangeActiveEnvironmentPath(() => {
            if (this.interpreter?.source !== 'setting') {
                traceInfo('The active Python environment changed; restarting the server.');
                void this.restart();
            }
        });
    }

    private async offerFix(message: string, interpreter: Interpreter): Promise<void> {
        const copy = 'Copy install command';
        const settings = 'Set memsearch.interpreter';
        const choice = await vscode.window.showErrorMessage(message, copy, settings, 'Show output');
        if (choice === copy) {
            await copyInstallCommand(interpreter);
        } else if (choice === settings) {
            await vscode.commands.executeCommand('workbench.action.openSettings', `${SETTINGS_SECTION}.interpreter`);
        } else if (choice === 'Show output') {
            showLog();
        }
    }

    dispose(): void {
        this.environmentsListener?.dispose();
        this.environmentsListener = undefined;
        void this.stop();
    }
}
