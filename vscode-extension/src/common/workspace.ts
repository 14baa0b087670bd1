/** Whether a folder is a memory workspace, and the one a command run for a folder uses (as core/onboard.py finds it). */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { getMemoryPaths } from './settings';

/** A folder is a memory workspace when it has `.memsearch.toml` or one of its memory folders (core.onboard). */
export function isMemoryWorkspace(folder: string, memoryPaths: readonly string[]): boolean {
    const exists = (file: string, dir: boolean): boolean => {
        try {
            const stat = fs.statSync(file);
            return dir ? stat.isDirectory() : stat.isFile();
        } catch {
            return false;
        }
    };
    return exists(path.join(folder, '.memsearch.toml'), false) || memoryPaths.some((p) => exists(path.resolve(folder, p), true));
}

/** Whether every marker of the workspace `folder` that exists (a link and its target) is this user's (core/onboard.py
 * `foreign_marker`): a `memory/` planted in a shared parent would otherwise read and receive your notes. */
function ownMarkers(folder: string, memoryPaths: readonly string[]): boolean {
    const uid = process.getuid?.();
    if (uid === undefined) {
        return true;
    }
    return ['.memsearch.toml', ...memoryPaths].every((marker) => {
        const file = path.resolve(folder, marker);
        for (const stat of [fs.lstatSync, fs.statSync]) {
            try {
                if (stat(file).uid !== uid) {
                    return false;
                }
            } catch {
                // absent (or a dangling link): nothing of another user's there
            }
        }
        return true;
    });
}

/**
 * The memory workspace that a command run for `folder` uses, found as the CLI and the server find it
 * (memsearch_lsp/cli/commands.py `_workspace`, core/onboard.py `enclosing_workspace`): `folder` itself when it is
 * one, else its nearest parent that is one with markers of this user's, below the home folder and the filesystem
 * root (an editor opened on `src/` serves the memory around it). Undefined when there is none.
 */
export function findMemoryWorkspace(folder: string, memoryPaths: readonly string[], home: string = os.homedir()): string | undefined {
    if (isMemoryWorkspace(folder, memoryPaths)) {
        return folder;
    }
    const real = (p: string): string => {
        try {
            return fs.realpathSync(p);
        } catch {
            return path.resolve(p);
        }
    };
    const start = real(folder);
    const stops = new Set([path.parse(start).root, real(home)]);
    for (let dir = path.dirname(start); !stops.has(dir); dir = path.dirname(dir)) {
        if (isMemoryWorkspace(dir, memoryPaths) && ownMarkers(dir, memoryPaths)) {
            return dir;
        }
        if (path.dirname(dir) === dir) {
            break;
        }
    }
    return undefined;
}

/** A workspace folder that is, or is inside, a memory workspace (see findMemoryWorkspace). */
export function isMemoryFolder(folder: vscode.WorkspaceFolder): boolean {
    return findMemoryWorkspace(folder.uri.fsPath, getMemoryPaths(folder.uri)) !== undefined;
}
