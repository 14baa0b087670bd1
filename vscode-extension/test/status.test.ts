import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Commands } from '../src/common/constants';
import { INDEXING_TEXT, IndexStatus, parseIndexed, plural, type StatusItem } from '../src/common/status';

function item(): StatusItem & { shown: boolean } {
    return {
        text: '',
        tooltip: undefined,
        command: undefined,
        name: undefined,
        backgroundColor: undefined,
        shown: false,
        show() {
            this.shown = true;
        },
        dispose() {},
    };
}

const indexed = (root: string, chunks: number) => ({ root, files: 2, chunks, embedded: 1, reused: chunks - 1, ms: 12.4 });

describe('status bar', () => {
    it('shows "indexing" until the first memsearch/indexed, then the chunk count', () => {
        const bar = item();
        const status = new IndexStatus(bar);
        assert.equal(bar.shown, true);
        assert.equal(bar.command, Commands.status, 'a click shows the status');
        assert.equal(bar.text, '$(sync~spin) memsearch: indexing');
        assert.equal(bar.text, INDEXING_TEXT);
        status.running();
        assert.equal(bar.text, INDEXING_TEXT, 'running, but not indexed yet');
        status.indexed(indexed('/ws', 42));
        assert.equal(bar.text, '$(database) memsearch: 42 chunks');
        assert.match(bar.tooltip as string, /\/ws: 2 files, 42 chunks/);
        assert.equal(bar.backgroundColor, undefined);
    });

    it('shows "indexing" while a work-done progress is open', () => {
        const bar = item();
        const status = new IndexStatus(bar);
        status.indexed(indexed('/ws', 1));
        assert.equal(bar.text, '$(database) memsearch: 1 chunk');
        status.onProgress('t1', { kind: 'begin', title: 'Indexing memory', percentage: 0 });
        assert.equal(bar.text, INDEXING_TEXT);
        status.onProgress('t1', { kind: 'report', message: '3/10 files', percentage: 30 });
        assert.match(bar.tooltip as string, /Indexing memory: 3\/10 files \(30%\)/);
        status.onProgress('t1', { kind: 'end' });
        assert.equal(bar.text, '$(database) memsearch: 1 chunk');
    });

    it('adds up the chunks of several roots, and restarts from "indexing"', () => {
        const bar = item();
        const status = new IndexStatus(bar);
        status.indexed(indexed('/a', 10));
        status.indexed(indexed('/b', 5));
        status.indexed(indexed('/a', 12));
        assert.equal(bar.text, '$(database) memsearch: 17 chunks');
        assert.equal(status.indexedRoots.length, 2);
        status.starting();
        assert.equal(bar.text, INDEXING_TEXT);
    });

    it('ignores a malformed notification', () => {
        const bar = item();
        const status = new IndexStatus(bar);
        status.indexed({ chunks: 3 });
        status.indexed(null);
        status.indexed({ root: '/ws', chunks: 'many' });
        assert.equal(bar.text, INDEXING_TEXT);
        assert.equal(parseIndexed({ root: '/r', chunks: 0 })?.files, 0);
    });

    it('warns when the server is not installed or stopped', () => {
        const bar = item();
        const status = new IndexStatus(bar);
        status.stopped('not-installed', 'pip install it');
        assert.equal(bar.text, '$(warning) memsearch: not installed');
        assert.match(bar.tooltip as string, /pip install it/);
        assert.notEqual(bar.backgroundColor, undefined);
        status.stopped('stopped', '');
        assert.equal(bar.text, '$(circle-slash) memsearch: stopped');
        status.starting();
        assert.equal(bar.text, INDEXING_TEXT);
        assert.equal(bar.backgroundColor, undefined);
    });

    it('counts in words', () => {
        assert.equal(plural(0, 'chunk'), '0 chunks');
        assert.equal(plural(1, 'file'), '1 file');
    });
});
