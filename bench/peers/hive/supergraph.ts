import { fileURLToPath } from 'node:url';
import { composeSubgraphs } from '@graphql-mesh/fusion-composition';
import { DefaultLogger } from '@graphql-mesh/utils';
import { loadOpenAPISubgraph } from '@omnigraph/openapi';

/*
 * The Hive peer's supergraph, composed at start from openapi.yaml as `mesh-compose`
 * would (the same two calls, without the CLI): offline, from the file kept beside this one.
 */

export async function composeVendingSupergraph(upstreamUrl: string, upstreamKey: string): Promise<string> {
  const load = loadOpenAPISubgraph('vending', {
    source: './openapi.yaml',
    endpoint: upstreamUrl,
    operationHeaders: { authorization: upstreamKey },
  });
  const { name, schema$ } = load({ fetch, cwd: fileURLToPath(new URL('.', import.meta.url)), logger: new DefaultLogger('compose') });
  const result = composeSubgraphs([{ name, schema: await schema$ }]);
  if (result.errors?.length) throw new AggregateError(result.errors, 'composition failed');
  return result.supergraphSdl;
}
