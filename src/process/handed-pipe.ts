/**
 * A command's pipe that the spawner hands over to the worker (the socket's fd, sent on the IPC
 * channel): the worker then reads and writes it itself, and no chunk makes a trip through the
 * spawner process. What is written before the fd has come waits here.
 */
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

export class HandedPipe extends Duplex {
  private socket: Socket | undefined;
  private waiting: Buffer[] = [];
  private ending = false;

  constructor() {
    super({ read() {} });
  }

  /** whether the fd has come: from then on its end is the socket's own */
  get attached(): boolean {
    return this.socket !== undefined;
  }

  attach(socket: Socket): void {
    if (this.socket || this.destroyed) {
      socket.destroy();
      return;
    }
    this.socket = socket;
    // what keeps the worker alive while a command runs is the spawner's channel, as for any command
    socket.unref();
    socket.on('data', (d: Buffer) => this.push(d));
    socket.on('end', () => this.push(null));
    // EPIPE on a command that stopped reading is its business; its output has ended
    socket.on('error', () => this.push(null));
    for (const b of this.waiting) socket.write(b);
    this.waiting = [];
    if (this.ending) socket.end();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (this.socket) this.socket.write(chunk);
    else this.waiting.push(chunk);
    cb();
  }

  override _final(cb: (e?: Error | null) => void): void {
    if (this.socket) this.socket.end();
    else this.ending = true;
    cb();
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    this.socket?.destroy();
    this.waiting = [];
    cb(err);
  }
}
