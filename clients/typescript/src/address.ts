/**
 * The sidecar's address: `A2A_COMMANDS_ADDR` and the `address` a client is given. Two
 * forms, as `a2a-commands ctl --addr` takes them (docs/kit-contract.md, section 7): a URL,
 * `http://host:port` or `https://host:port` (TLS), or `host:port`. Pinned by
 * `docs/vectors/addresses.json`.
 *
 * @packageDocumentation
 */

/** The environment variable that names the sidecar. */
export const ADDRESS_ENV = "A2A_COMMANDS_ADDR";
/** The sidecar's address when none is given: its default `--listen`. */
export const DEFAULT_ADDRESS = "http://127.0.0.1:50051";

/** Where the sidecar is: `target` (`host:port`) and whether to use TLS. */
export interface SidecarAddress {
  target: string;
  tls: boolean;
}

const ADDRESS = /^(?:([A-Za-z]+):\/\/)?(\[[0-9A-Fa-f:.]+\]|[^\s:/?#@[\]]+):([0-9]+)(\/?)$/;

/** Reads an address in either form; throws a `TypeError` saying what is wrong. */
export function parseAddress(value: string): SidecarAddress {
  const match = ADDRESS.exec(value);
  const scheme = match?.[1]?.toLowerCase() ?? "";
  if (!match || !["", "http", "https"].includes(scheme) || (match[4] && !scheme)) {
    throw new TypeError(`${JSON.stringify(value)} is not host:port, http://host:port or https://host:port`);
  }
  const port = Number(match[3]);
  if (port < 1 || port > 65535) throw new TypeError(`${JSON.stringify(value)}: the port must be 1 to 65535`);
  return { target: `${match[2]}:${port}`, tls: scheme === "https" };
}

/** `$A2A_COMMANDS_ADDR`, else {@link DEFAULT_ADDRESS}. */
export function addressFromEnv(): SidecarAddress {
  const value = process.env[ADDRESS_ENV] || DEFAULT_ADDRESS;
  try {
    return parseAddress(value);
  } catch (error) {
    throw new TypeError(`${ADDRESS_ENV}: ${(error as Error).message}`);
  }
}
