import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SEARCH_DEBOUNCE_MS, hitRange, oneLine, openHit, parseHits, pickSearchHit, toItem } from '../src/common/search';
import { stub, type CancellationTokenSource } from './stubs/vscode';

type Token = CancellationTokenSource['token'];

const HIT = {
    id: '0123456789abcdef',
    source: 'memory/2026-02-09.md',
    uri: 'file:///ws/memory/2026-02-09.md',
    heading: 'Redis Caching',
    start_line: 12,
    end_line: 20,
    score: 0.8312,
    snippet: 'We chose Redis\nfor the session cache.',
    date: '2026-02-09',
    range: { start: { line: 11, character: 0 }, end: { line: 20, character: 0 } },
};

describe('search results', () => {
    it('keeps well-formed hits and drops the rest', () => {
        const hits = parseHits([HIT, { heading: 'no uri' }, 'junk', null, { ...HIT, range: 'bad', score: 'x' }]);
        assert.equal(hits.length, 2);
        assert.deepEqual(hits[0], HIT);
        assert.equal(hits[1]?.range, undefined);
        assert.equal(hits[1]?.score, 0);
        assert.deepEqual(parseHits({ not: 'an array' }), []);
        assert.deepEqual(parseHits(null), []);
    });

    it('shows heading, file, date, score and snippet, and is never filtered away', () => {
        const item = toItem(HIT);
        assert.equal(item.label, 'Redis Caching');
        assert.equal(item.description, 'memory/2026-02-09.md:12 · 2026-02-09');
        assert.equal(item.detail, '0.83 · We chose Redis for the session cache.');
        assert.equal(item.alwaysShow, true);
        assert.equal(item.hit, HIT);
        const bare = toItem({ ...HIT, heading: '', date: '', start_line: 0 });
        assert.equal(bare.label, 'memory/2026-02-09.md');
        assert.equal(bare.description, 'memory/2026-02-09.md');
    });

    it('says when a hit comes from the archive of compacted logs', () => {
        const hits = parseHits([{ ...HIT, source: 'memory/archive/2026-02-09.md', archived: true }]);
        assert.equal(hits.length, 1);
        assert.equal(hits[0]?.archived, true);
        assert.deepEqual(hits.map((hit) => toItem(hit).detail), ['0.83 · archived · We chose Redis for the session cache.']);
        assert.equal(parseHits([{ ...HIT, archived: false }])[0]?.archived, undefined);
    });

    it('folds snippets to one line', () => {
        assert.equal(oneLine('  a\n\n b\tc  '), 'a b c');
        assert.equal(oneLine('x'.repeat(10), 5), 'xxxx…');
    });

    it('selects the chunk: its LSP range, or its lines', () => {
        const range = hitRange(HIT);
        assert.deepEqual([range.start.line, range.start.character, range.end.line, range.end.character], [11, 0, 20, 0]);
        const { range: _unused, ...noRange } = HIT;
        const byLines = hitRange(noRange);
        assert.deepEqual([byLines.start.line, byLines.end.line, byLines.end.character], [11, 20, 0]);
    });
});

describe('search picker', () => {
    beforeEach(() => stub.reset());

    function fakeServer(answer: (query: string) => unknown = () => [HIT]) {
        const calls: { query: string; topK: number; token: Token }[] = [];
        const search = async (query: string, topK: number, token: Token): Promise<unknown> => {
            calls.push({ query, topK, token });
            return answer(query);
        };
        return { calls, search };
    }

    it('debounces typing (~200 ms) and asks once for the last value', async () => {
        assert.equal(SEARCH_DEBOUNCE_MS, 200);
        const server = fakeServer();
        const chosen = pickSearchHit(server.search, { topK: 20, debounceMs: 300 });
        const picker = stub.quickPicks[0];
        assert.ok(picker);
        assert.equal(picker.matchOnDescription, true);
        assert.equal(picker.matchOnDetail, true);
        const typed = Date.now();
        picker.type('r');
        picker.type('re');
        picker.type('redis');
        assert.equal(picker.busy, true);
        await sleep(10);
        if (Date.now() - typed < 250) {
            // (a loaded machine may wake this test after the quiet time: then only the rest is checked)
            assert.equal(server.calls.length, 0, 'not before the quiet time');
        }
        await sleep(450);
        assert.deepEqual(
            server.calls.map((c) => [c.query, c.topK]),
            [['redis', 20]],
        );
        assert.equal(picker.busy, false);
        assert.equal(picker.items.length, 1);
        assert.equal(picker.items[0]?.label, 'Redis Caching');
        assert.equal(picker.items[0]?.alwaysShow, true);

        picker.pick(picker.items[0] ?? { label: '' });
        assert.deepEqual(await chosen, HIT);
        assert.equal(picker.disposed, true);
    });

    it('drops a slow answer for an older query and cancels it', async () => {
        let release: (value: unknown) => void = () => {};
        const server = fakeServer((query) => (query === 'slow' ? new Promise((resolve) => (release = resolve)) : [{ ...HIT, heading: query }]));
        const chosen = pickSearchHit(server.search, { topK: 5, debounceMs: 5 });
        const picker = stub.quickPicks[0];
        assert.ok(picker);
        picker.type('slow');
        await sleep(30);
        picker.type('fast');
        assert.equal(server.calls[0]?.token.isCancellationRequested, true);
        await sleep(30);
        release([{ ...HIT, heading: 'stale' }]);
        await sleep(5);
        assert.deepEqual(
            picker.items.map((i) => i.label),
            ['fast'],
        );
        picker.hide();
        assert.equal(await chosen, undefined);
    });

    it('starts from an initial value, shows "no matches" and errors as items', async () => {
        const server = fakeServer((query) => {
            if (query === 'boom') {
                throw new Error('server exploded');
            }
            return [];
        });
        const chosen = pickSearchHit(server.search, { topK: 3, debounceMs: 1, initialValue: 'nothing' });
        const picker = stub.quickPicks[0];
        assert.ok(picker);
        await sleep(20);
        assert.deepEqual(
            server.calls.map((c) => c.query),
            ['nothing'],
        );
        assert.equal(picker.items[0]?.label, 'No matching memories');
        picker.type('boom');
        await sleep(20);
        assert.equal(picker.items[0]?.label, '$(error) Search failed');
        assert.equal(picker.items[0]?.detail, 'server exploded');
        picker.pick(picker.items[0] ?? { label: '' });
        assert.equal(picker.visible, true, 'an error item is not a result');
        picker.type('   ');
        assert.equal(picker.items.length, 0);
        picker.hide();
        assert.equal(await chosen, undefined);
    });

    it('opens the file with the chunk selected', async () => {
        const editor = (await openHit(HIT)) as unknown as { revealed: unknown[] };
        assert.equal(stub.shown.length, 1);
        assert.equal(stub.shown[0]?.uri.path, '/ws/memory/2026-02-09.md');
        const selection = stub.shown[0]?.options?.selection;
        assert.deepEqual([selection?.start.line, selection?.end.line], [11, 20]);
        assert.equal(editor.revealed.length, 1);
    });
});
