// ESLint flat config: recommended + type-aware rules of typescript-eslint for src/ and test/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
    { ignores: ['out/**', 'node_modules/**', '*.vsix'] },
    js.configs.recommended,
    {
        files: ['**/*.ts'],
        extends: [...tseslint.configs.strictTypeChecked],
        languageOptions: {
            parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
        },
        rules: {
            '@typescript-eslint/no-explicit-any': 'error',
            '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
            '@typescript-eslint/no-unnecessary-condition': 'off',
            '@typescript-eslint/no-floating-promises': [
                'error',
                // node:test's describe/it return promises that the runner itself awaits.
                { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test'] }] },
            ],
            '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
            eqeqeq: 'error',
            'no-console': 'error',
        },
    },
    {
        // Fakes in tests implement async interfaces with plain values; short arrows are fine there.
        files: ['test/**/*.ts'],
        rules: {
            '@typescript-eslint/require-await': 'off',
            '@typescript-eslint/no-confusing-void-expression': 'off',
        },
    },
    {
        files: ['**/*.mjs'],
        languageOptions: {
            globals: { console: 'readonly', process: 'readonly', Buffer: 'readonly' },
        },
    },
);
