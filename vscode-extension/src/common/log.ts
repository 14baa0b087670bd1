/** The extension's log: one LogOutputChannel ("Memsearch"), shared with the language client. */
import type { LogOutputChannel } from 'vscode';

export interface Disposable {
    dispose(): void;
}

let channel: LogOutputChannel | undefined;

/** Send the trace* functions to `logChannel` until the returned Disposable is disposed. */
export function registerLogger(logChannel: LogOutputChannel): Disposable {
    channel = logChannel;
    return {
        dispose: () => {
            channel = undefined;
        },
    };
}

/** One readable line from mixed arguments: strings as they are, errors with their stack. */
export function formatLogArgs(args: readonly unknown[]): string {
    return args
        .map((arg) => {
            if (typeof arg === 'string') {
                return arg;
            }
            if (arg instanceof Error) {
                return arg.stack ?? `${arg.name}: ${arg.message}`;
            }
            try {
                return JSON.stringify(arg);
            } catch {
                return String(arg);
            }
        })
        .join(' ');
}

export function traceError(...args: unknown[]): void {
    channel?.error(formatLogArgs(args));
}

export function traceWarn(...args: unknown[]): void {
    channel?.warn(formatLogArgs(args));
}

export function traceInfo(...args: unknown[]): void {
    channel?.info(formatLogArgs(args));
}

export function traceVerbose(...args: unknown[]): void {
    channel?.debug(formatLogArgs(args));
}

/** Plain text (no timestamp or level), e.g. the report of "Show status". */
export function traceLines(lines: readonly string[]): void {
    for (const line of lines) {
        channel?.appendLine(line);
    }
}

export function showLog(): void {
    channel?.show(true);
}
