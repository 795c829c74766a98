// Lint: typescript-eslint's recommended rules, plus the house rules that keep
// the layers honest (docs/architecture.md "Boundaries"):
// - configuration is read only by config modules;
// - every instance state change goes through the lifecycle engine's moveInstance;
// - routes call services and never import the store, reach for one (`x.store`) or build services
//   (services are built in the composition root, src/server/orchestrator.ts);
// - domain/ is the ground: it imports nothing outside itself (not provisioning/, not contracts/);
// - ectl talks to the public API only: it may not import the server;
// - only the agent's Docker adapter imports dockerode, and the local
//   image build of tests and `npm start` (src/shared/local-image.ts).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const STORE_IMPORT = {
  group: ['**/store/*', '**/store/**'],
  message: 'Routes call services; only services and the composition root use the store.',
};
const SERVER_IMPORT = {
  group: ['**/server/*', '**/server/**'],
  message: 'ectl talks to the public API only; shared shapes live in src/contracts/.',
};
const UP_FROM_DOMAIN = {
  group: ['**/provisioning', '**/provisioning/**', '**/contracts', '**/contracts/**', '../**'],
  message:
    'domain/ is the ground layer: it imports only from itself (put a shared shape in src/domain/ and let the upper layer import it).',
};
const DOCKERODE = { name: 'dockerode', message: 'Only the agent Docker adapter (src/agent/docker-runtime.ts) talks to Docker.' };
const TRANSITION = {
  selector: "CallExpression[callee.property.name='transition'][callee.object.property.name='instances']",
  message:
    'Move instances between states with moveInstance (src/server/lifecycle-engine/instance-transitions.ts): it applies the transition table.',
};
const STORE_MEMBER = {
  selector: "MemberExpression[property.name='store']",
  message:
    'Routes call services: reads through ctx.queries (services/read-queries.ts), writes through a service; the store is not on the route context.',
};
const NEW_SERVICE = {
  selector: 'NewExpression[callee.name=/(Service|Runner|Creator|Previewer|Handler|Store|Feed|Driver)$/]',
  message: 'Services are built in the composition root (src/server/orchestrator.ts) and reach routes through ServerContext.',
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', '.test-cache/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration in a config module only.' }],
      'no-restricted-imports': ['error', { paths: [DOCKERODE] }],
      'no-restricted-syntax': ['error', TRANSITION],
    },
  },
  {
    files: ['src/server/routes/**', 'src/server/registry/*-routes.ts', 'src/server/registry/router-integration.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [DOCKERODE], patterns: [STORE_IMPORT] }],
      'no-restricted-syntax': ['error', TRANSITION, NEW_SERVICE, STORE_MEMBER],
    },
  },
  {
    files: ['src/domain/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [DOCKERODE], patterns: [UP_FROM_DOMAIN] }] },
  },
  {
    files: ['src/cli/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [DOCKERODE], patterns: [SERVER_IMPORT] }] },
  },
  {
    // The one Docker adapter, the local image build (tests and `npm start`), and the tests' own Docker helpers.
    files: ['src/agent/docker-runtime.ts', 'src/shared/local-image.ts', 'test/**', 'bench/**'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    // The one place states change, and the store that implements it (and its contract tests).
    files: ['src/server/lifecycle-engine/instance-transitions.ts', 'src/store/**', 'src/server/changes/notifying-store.ts', 'test/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['**/config.ts', '**/config/*.ts', 'test/**', 'bench/**', 'test-images/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
