// The Minecraft side of the test server, on minecraft-protocol's createServer:
// Server List Ping with the real player count, offline-mode logins into a void
// world (login + spawn + position are enough for a client to be in the game),
// handshake intent 3 (transfer) logins, `say` and the 1.20.5+ Transfer packet.

import mc from 'minecraft-protocol';
import minecraftData from 'minecraft-data';
import nbt from 'prismarine-nbt';

export interface OnlinePlayer {
  uuid: string;
  name: string;
  transferred: boolean;
  client: mc.ServerClient;
}

export interface GameServerOptions {
  port: number;
  version: string;
  motd: string;
  maxPlayers: number;
  acceptsTransfers: boolean;
  spawn: { x: number; y: number; z: number };
  /** False while the server must look "not ready": status shows players.max = 0, logins are refused. */
  isReady: () => boolean;
  log: (message: string) => void;
  onJoin: (player: OnlinePlayer) => void;
  onLeave: (player: OnlinePlayer) => void;
}

const INTENT_TRANSFER = 3;

export class GameServer {
  readonly players = new Map<string, OnlinePlayer>();
  private server: mc.Server | undefined;
  private readonly data: minecraftData.IndexedData;
  private readonly transferredClients = new WeakSet<mc.Client>();

  constructor(private readonly options: GameServerOptions) {
    const data = minecraftData(options.version);
    if (!data) throw new Error(`no protocol data for ${options.version}`);
    this.data = data;
  }

  get supportsTransfer(): boolean {
    return this.data.isNewerOrEqualTo('1.20.5');
  }

  /** Opens the game port; resolves once it accepts connections. */
  async listen(): Promise<void> {
    const o = this.options;
    const server = mc.createServer({
      'online-mode': false,
      port: o.port,
      version: o.version,
      motd: o.motd,
      maxPlayers: o.maxPlayers,
      hideErrors: true,
      beforePing: (response: { players: { max: number } }) => {
        if (!o.isReady()) response.players.max = 0;
        return response;
      },
    });
    this.server = server;
    server.on('connection', (client) => this.onConnection(client));
    server.on('playerJoin', (client) => this.onPlayerJoin(client));
    await new Promise<void>((resolve, reject) => {
      server.once('listening', () => resolve());
      server.once('error', reject);
    });
    server.on('error', (err) => o.log(`Network error: ${err.message}`));
  }

  /** Kicks every player with vanilla's shutdown message and closes the port. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    const gone = [...this.players.values()].map(
      (p) =>
        new Promise<void>((resolve) => {
          p.client.once('end', () => resolve());
          p.client.end('Server closed');
        }),
    );
    await Promise.race([Promise.all(gone), new Promise((r) => setTimeout(r, 1000).unref())]);
    server.close();
  }

  say(message: string): void {
    const content = nbt.comp({ text: nbt.string(`[Server] ${message}`) });
    for (const p of this.players.values()) this.send(p.client, 'system_chat', { content, isActionBar: false });
  }

  transfer(host: string, port: number, target: string): string[] | { error: string } {
    if (!this.supportsTransfer) return { error: `Transfers need Minecraft 1.20.5 or newer (this server runs ${this.options.version})` };
    const wanted = target.toLowerCase();
    const targets = [...this.players.values()].filter((p) => wanted === '@a' || p.name.toLowerCase() === wanted);
    if (targets.length === 0) return { error: 'No player was found' };
    for (const p of targets) {
      this.options.log(`Transferring ${p.name} to ${host}:${port}`);
      this.send(p.client, 'transfer', { host, port });
    }
    return targets.map((p) => p.name);
  }

  private onConnection(client: mc.ServerClient): void {
    // minecraft-protocol's handshake plugin handles intents 1 and 2; this
    // listener runs after it and adds intent 3 and the not-ready refusal.
    client.once('set_protocol', (packet: { nextState: number }) => {
      if (packet.nextState === INTENT_TRANSFER) {
        client.state = mc.states.LOGIN;
        if (!this.options.acceptsTransfers) {
          client.end('Transfers are disabled on this server (accepts-transfers=false)');
          return;
        }
        this.transferredClients.add(client);
      }
      if (packet.nextState !== 1 && !this.options.isReady()) client.end('Server is still starting! Please wait before reconnecting.');
    });
  }

  private onPlayerJoin(client: mc.ServerClient): void {
    const o = this.options;
    const uuid = client.uuid;
    const previous = this.players.get(uuid);
    if (previous) previous.client.end('You logged in from another location');
    const player: OnlinePlayer = { uuid, name: client.username, transferred: this.transferredClients.has(client), client };
    this.players.set(uuid, player);
    client.on('end', () => {
      if (this.players.get(uuid) !== player) return;
      this.players.delete(uuid);
      o.log(`${player.name} left the game`);
      o.onLeave(player);
    });
    // Player data is written before the client sees the world, as vanilla loads it first.
    o.onJoin(player);
    this.sendSpawn(client);
    o.log(
      `${player.name}[/${client.socket.remoteAddress}:${client.socket.remotePort}] logged in${player.transferred ? ' (transfer)' : ''} at (${o.spawn.x}, ${o.spawn.y}, ${o.spawn.z})`,
    );
    o.log(`${player.name} joined the game`);
  }

  /** The packets a client needs to be in a (void) world. */
  private sendSpawn(client: mc.ServerClient): void {
    const { spawn, maxPlayers } = this.options;
    const loginPacket = this.data.loginPacket as unknown as Record<string, unknown> & { worldState?: Record<string, unknown> };
    this.send(client, 'login', {
      ...loginPacket,
      entityId: client.id,
      isHardcore: false,
      maxPlayers,
      viewDistance: 2,
      simulationDistance: 2,
      reducedDebugInfo: false,
      enableRespawnScreen: true,
      doLimitedCrafting: false,
      enforcesSecureChat: false,
      worldState: { ...loginPacket.worldState, gamemode: 'creative', previousGamemode: 255, isFlat: true },
    });
    this.send(client, 'spawn_position', { location: spawn, angle: 0 });
    this.send(client, 'position', { ...spawn, yaw: 0, pitch: 0, flags: 0, teleportId: 1 });
    // "Start waiting for level chunks" (1.20.3+): a void world has none to send.
    this.send(client, 'game_state_change', { reason: 'level_chunks_load_start', gameMode: 0 });
  }

  private send(client: mc.Client, name: string, params: unknown): void {
    try {
      client.write(name, params);
    } catch (err) {
      this.options.log(`Failed to send ${name} to ${client.username}: ${(err as Error).message}`);
    }
  }
}
