// Lint: typescript-eslint's recommended rules, plus the one house rule that
// configuration is read only by config modules (STYLE.md, habit 6).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', '.test-cache/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration in a config module only.' }],
    },
  },
  {
    files: ['**/config.ts', '**/config/*.ts', 'test/**', 'bench/**', 'test-images/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
