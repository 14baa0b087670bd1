// Checks the .vsix that `vsce package` wrote: it holds the bundle, package.json, README, LICENSE,
// the memsearch_lsp wheel (server/) and the walkthrough pages, no node_modules, and is under 6 MB. Reads the zip's central directory itself
// (no unzip needed). Usage: node scripts/check-vsix.mjs [file.vsix]
import { readFileSync, statSync } from 'node:fs';

const MAX_BYTES = 6 * 1024 * 1024;
const manifest = JSON.parse(readFileSync('package.json', 'utf8'));
const file = process.argv[2] ?? `${manifest.name}-${manifest.version}.vsix`;

/** Names of the entries of a zip file, from its central directory. */
export function zipEntries(buffer) {
    const eocdSignature = 0x06054b50;
    let eocd = -1;
    for (let i = buffer.length - 22; i >= Math.max(0, buffer.length - 22 - 0xffff); i--) {
        if (buffer.readUInt32LE(i) === eocdSignature) {
            eocd = i;
            break;
        }
    }
    if (eocd < 0) {
        throw new Error(`${file}: not a zip file`);
    }
    const count = buffer.readUInt16LE(eocd + 10);
    let offset = buffer.readUInt32LE(eocd + 16);
    const names = [];
    for (let n = 0; n < count; n++) {
        if (buffer.readUInt32LE(offset) !== 0x02014b50) {
            throw new Error(`${file}: bad central directory entry ${n}`);
        }
        const nameLength = buffer.readUInt16LE(offset + 28);
        const extraLength = buffer.readUInt16LE(offset + 30);
        const commentLength = buffer.readUInt16LE(offset + 32);
        names.push(buffer.toString('utf8', offset + 46, offset + 46 + nameLength));
        offset += 46 + nameLength + extraLength + commentLength;
    }
    return names;
}

const size = statSync(file).size;
const names = zipEntries(readFileSync(file));
const problems = [];
const required = [
    ['extension/out/extension.js', (n) => n === 'extension/out/extension.js'],
    ['extension/package.json', (n) => n === 'extension/package.json'],
    ['extension/README.md', (n) => /^extension\/readme\.md$/i.test(n)],
    ['extension/LICENSE', (n) => /^extension\/license(\.txt|\.md)?$/i.test(n)],
    ['extension/server/memsearch_lsp-*.whl', (n) => /^extension\/server\/memsearch_lsp-[^/-]+-py3-none-any\.whl$/.test(n)],
    ['extension/walkthrough/install.md', (n) => n === 'extension/walkthrough/install.md'],
];
for (const [label, test] of required) {
    if (!names.some(test)) {
        problems.push(`missing ${label}`);
    }
}
const devFiles = names.filter((n) => /(^|\/)node_modules\//.test(n) || /^extension\/(src|test|scripts)\//.test(n) || n.endsWith('.ts'));
if (devFiles.length > 0) {
    problems.push(`development files inside: ${devFiles.slice(0, 5).join(', ')}${devFiles.length > 5 ? ', ...' : ''}`);
}
if (size >= MAX_BYTES) {
    problems.push(`${size} bytes, over the 6 MB limit`);
}
console.log(`${file}: ${size} bytes (${(size / 1024).toFixed(1)} KiB), ${names.length} entries`);
for (const name of names) {
    console.log(`  ${name}`);
}
if (problems.length > 0) {
    console.error(`check-vsix: ${problems.join('; ')}`);
    process.exit(1);
}
console.log('check-vsix: ok');
