// A spinner and a byte progress bar, drawn on stderr only when it is a
// terminal; otherwise one line at the start and one at the end.

import type { Output } from './output.js';
import { formatBytes } from './table.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export interface Spinner {
  update(text: string): void;
  stop(finalLine?: string): void;
}

export function startSpinner(out: Output, text: string, intervalMs = 100): Spinner {
  let label = text;
  let frame = 0;
  if (!out.interactive) {
    out.error(`${text}…`);
    return { update: (t) => void (label = t), stop: (final) => (final ? out.error(final) : undefined) };
  }
  const draw = (): void => out.status(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${label}`);
  draw();
  const timer = setInterval(draw, intervalMs);
  return {
    update: (t) => {
      label = t;
      draw();
    },
    stop: (final) => {
      clearInterval(timer);
      out.status('\r\x1b[2K');
      if (final) out.error(final);
    },
  };
}

export interface ProgressBar {
  advance(bytes: number): void;
  done(): void;
}

export function startProgress(out: Output, label: string, totalBytes: number, width = 30): ProgressBar {
  let sent = 0;
  let lastDraw = 0;
  const draw = (): void => {
    const ratio = totalBytes > 0 ? Math.min(1, sent / totalBytes) : 1;
    const filled = Math.round(ratio * width);
    out.status(
      `\r\x1b[2K${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.floor(ratio * 100)}% ${formatBytes(sent)}/${formatBytes(totalBytes)}`,
    );
  };
  if (!out.interactive) out.error(`${label}: ${formatBytes(totalBytes)}`);
  return {
    advance(bytes) {
      sent += bytes;
      const now = Date.now();
      if (out.interactive && now - lastDraw > 50) {
        lastDraw = now;
        draw();
      }
    },
    done() {
      if (out.interactive) {
        draw();
        out.status('\n');
      }
    },
  };
}
