import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Static files for the orchestrator to serve at / (orchestrator/src/server/web).
// `npm run dev` proxies the API to a local orchestrator on :8080.
export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, assetsInlineLimit: 0 },
  server: { proxy: { '/api': { target: 'http://127.0.0.1:8080', changeOrigin: false } } },
});
