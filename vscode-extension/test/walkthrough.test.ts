import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { beforeEach, describe, it } from 'node:test';
import manifest from '../package.json';
import { registerCommands, type ServerControl } from '../src/common/commands';
import { Commands, Contexts, WALKTHROUGH_ID } from '../src/common/constants';
import { registerSetupCommands } from '../src/common/setup';
import { IndexStatus } from '../src/common/status';
import { stub, window } from './stubs/vscode';

interface Step {
    id: string;
    title: string;
    description: string;
    media: { markdown?: string; image?: string };
    completionEvents?: string[];
}

const walkthroughs = (manifest.contributes as unknown as { walkthroughs: { id: string; steps: Step[] }[] }).walkthroughs;

/** `command:<id>` links of a step's description. */
function linkedCommands(step: Step): string[] {
    return [...step.description.matchAll(/\(command:([\w.]+)\)/g)].map((m) => m[1] ?? '');
}

describe('walkthrough', () => {
    beforeEach(() => stub.reset());

    it('guides through install, init, search, remember, compact and MCP', () => {
        assert.equal(walkthroughs.length, 1);
        const walkthrough = walkthroughs[0];
        assert.ok(walkthrough);
        assert.equal(walkthrough.id, WALKTHROUGH_ID);
        assert.deepEqual(walkthrough.steps.map((s) => s.id), ['install', 'init', 'search', 'remember', 'compact', 'mcp']);
        for (const step of walkthrough.steps) {
            const media = step.media.markdown ?? '';
            assert.ok(existsSync(media), `${step.id}: ${media}`);
            assert.match(readFileSync(media, 'utf8'), /^# /, `${step.id}: a markdown page`);
            assert.ok(linkedCommands(step).length > 0, `${step.id} links a command`);
            assert.ok((step.completionEvents ?? []).length > 0, `${step.id} completes on something`);
        }
        const byId = new Map(walkthrough.steps.map((s) => [s.id, s]));
        assert.deepEqual(linkedCommands(byId.get('install') as Step), [Commands.installServer]);
        assert.deepEqual(linkedCommands(byId.get('init') as Step), [Commands.init]);
        assert.deepEqual(linkedCommands(byId.get('remember') as Step), [Commands.remember, Commands.openToday]);
        assert.ok(byId.get('install')?.completionEvents?.includes(`onContext:${Contexts.serverInstalled}`));
        assert.ok(byId.get('init')?.completionEvents?.includes(`onContext:${Contexts.memoryWorkspace}`));
    });

    it('links only commands that are contributed, registered and activate the extension', () => {
        const server: ServerControl = {
            isRunning: false,
            request: async () => undefined,
            executeCommand: async () => undefined,
            restart: async () => undefined,
            describe: () => [],
        };
        const host = { serverPython: async () => undefined, install: async () => undefined, restart: async () => undefined, memoryChanged: () => undefined };
        registerCommands(server, new IndexStatus(window.createStatusBarItem()));
        registerSetupCommands(host);
        const contributed = new Map(manifest.contributes.commands.map((c) => [c.command, c.title]));
        const linked = walkthroughs.flatMap((w) => w.steps.flatMap(linkedCommands));
        for (const id of [...linked, ...walkthroughs.flatMap((w) => w.steps.flatMap((s) => s.completionEvents ?? []))
            .filter((e) => e.startsWith('onCommand:')).map((e) => e.slice('onCommand:'.length))]) {
            assert.ok(contributed.has(id), `${id} is contributed`);
            assert.ok(stub.commands.has(id), `${id} is registered`);
            assert.ok(manifest.activationEvents.includes(`onCommand:${id}`), `${id} activates the extension`);
        }
        assert.equal(contributed.get(Commands.init), 'Initialize memory in this folder');
        assert.equal(contributed.get(Commands.remember), 'Remember...');
        assert.equal(contributed.get(Commands.openToday), "Open today's log");
        assert.equal(contributed.get(Commands.installServer), 'Install the memsearch-lsp server');
    });
});
