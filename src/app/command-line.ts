import { readFileSync } from 'node:fs';

/*
 * What the start command takes besides the environment (and a `.env` file:
 * config/env-file.ts): `--help` and `--version`. Any other argument is
 * refused, so that a flag a newcomer guesses (`--port`) is not silently
 * ignored while the server starts with its defaults.
 */

const USAGE = `Usage: vending-gateway [--help | --version]

Starts the gateway: GraphQL, REST, webhooks and live events in front of the
vending service's REST API (README.md).

It is configured by environment variables only: every one, its default and
what it accepts is in README.md and .env.example. A file named .env in the
working directory is read first; a variable set in the environment wins over
the file. Copy .env.example to .env and uncomment what you change.

Options:
  -h, --help      print this and exit
  -v, --version   print the version and exit
`;

/** The version of the package this file was built in: dist/ and src/ both sit beside package.json. */
export function version(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

/** Answers `--help` and `--version`, refuses any other argument (exit 2); returns only when the gateway is to start. */
export function answerArguments(args: readonly string[]): void {
  const [first] = args;
  if (first === '--help' || first === '-h') {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  if (first === '--version' || first === '-v') {
    process.stdout.write(`vending-gateway ${version()}\n`);
    process.exit(0);
  }
  if (first !== undefined) {
    process.stderr.write(`vending-gateway: unknown argument ${JSON.stringify(first)}: configure it with environment variables (--help)\n`);
    process.exit(2);
  }
}
