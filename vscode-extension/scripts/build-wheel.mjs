// Builds the memsearch_lsp wheel from this checkout into server/ (the .vsix carries it; the extension
// installs it into its private venv). Builds from a copy of the package's tracked files, so the checkout
// gets no build/ or *.egg-info and parallel builds (the Python tests build too) do not collide.
// Python: $PYTHON, else ../.venv/bin/python, else python3. With `build` and setuptools installed there
// (the dev extra) the build is offline (--no-isolation); otherwise `pip wheel` fetches setuptools.
// Usage: node scripts/build-wheel.mjs
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const root = resolve('..');
const out = resolve('server');
const INCLUDE = ['pyproject.toml', 'README.md', 'LICENSE', 'memsearch_lsp'];

function python() {
    if (process.env.PYTHON) {
        return process.env.PYTHON;
    }
    const venv = join(root, '.venv', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
    return existsSync(venv) ? venv : 'python3';
}

/** The package's files: those git tracks (a checkout), else every file but caches (an unpacked sdist). */
function sourceFiles() {
    const git = spawnSync('git', ['ls-files', '-z', '--', ...INCLUDE], { cwd: root, encoding: 'utf8' });
    if (git.status === 0 && git.stdout.length > 0) {
        return git.stdout.split('\0').filter((name) => name !== '');
    }
    const files = [];
    const walk = (rel) => {
        const abs = join(root, rel);
        if (!existsSync(abs)) {
            return;
        }
        for (const entry of readdirSync(abs, { withFileTypes: true })) {
            const child = join(rel, entry.name);
            if (entry.name === '__pycache__' || entry.name.endsWith('.pyc')) {
                continue;
            }
            if (entry.isDirectory()) {
                walk(child);
            } else {
                files.push(child);
            }
        }
    };
    for (const name of INCLUDE) {
        if (name.includes('.') || name === 'LICENSE') {
            files.push(name);
        } else {
            walk(name);
        }
    }
    return files;
}

const work = mkdtempSync(join(tmpdir(), 'memsearch-wheel-'));
try {
    const src = join(work, 'src');
    for (const file of sourceFiles()) {
        mkdirSync(dirname(join(src, file)), { recursive: true });
        cpSync(join(root, file), join(src, file));
    }
    const dist = join(work, 'dist');
    const py = python();
    const hasBuild = spawnSync(py, ['-c', 'import build, setuptools'], { stdio: 'ignore' }).status === 0;
    const args = hasBuild
        ? ['-m', 'build', '--wheel', '--no-isolation', '--outdir', dist, src]
        : ['-m', 'pip', 'wheel', '--no-deps', '--wheel-dir', dist, src];
    execFileSync(py, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    const wheels = readdirSync(dist).filter((name) => /^memsearch_lsp-.*\.whl$/.test(name));
    if (wheels.length !== 1) {
        throw new Error(`expected one memsearch_lsp wheel, got ${wheels.join(', ') || 'none'}`);
    }
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    cpSync(join(dist, wheels[0]), join(out, wheels[0]));
    console.log(`build-wheel: server/${wheels[0]} (with ${py})`);
} finally {
    rmSync(work, { recursive: true, force: true });
}
