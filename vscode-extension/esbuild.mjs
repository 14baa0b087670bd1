// Bundles the extension into out/extension.js (one file: the .vsix needs no node_modules).
// `--tests` bundles test/*.test.ts into out/test/ with `vscode` replaced by test/stubs/vscode.ts.
import { build, context } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';

const watch = process.argv.includes('--watch');
const tests = process.argv.includes('--tests');

/** @type {import('esbuild').BuildOptions} */
const common = {
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    logLevel: 'warning',
};

if (tests) {
    rmSync('out/test', { recursive: true, force: true });
    await build({
        ...common,
        entryPoints: readdirSync('test')
            .filter((name) => name.endsWith('.test.ts'))
            .map((name) => `test/${name}`),
        outdir: 'out/test',
        sourcemap: 'inline',
        alias: { vscode: './test/stubs/vscode.ts' },
    });
} else {
    /** @type {import('esbuild').BuildOptions} */
    const options = {
        ...common,
        entryPoints: ['src/extension.ts'],
        outfile: 'out/extension.js',
        external: ['vscode'],
        minify: !watch,
        keepNames: true,
        sourcemap: watch ? 'inline' : false,
    };
    if (watch) {
        const ctx = await context(options);
        await ctx.watch();
        console.log('esbuild: watching src/ ...');
    } else {
        await build(options);
    }
}
