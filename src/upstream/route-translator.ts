/**
 * Which way a request crosses to a route, decided once per route: the passthrough when the route
 * speaks the client's protocol, the translator of the pair otherwise; null when translating is off
 * (the translate plugin disabled) and the route would need it.
 */
import type { ProviderConfig } from '../config/types';
import type { Endpoint } from '../protocols/types';
import { translatorFor } from '../translators';
import type { ResponseReferences } from '../translators/responses-to-messages/references';
import { speaksNatively, wireOf } from '../wire';
import type { RouteTranslator } from './attempt';
import { PASSTHROUGH } from './passthrough';
import { translating } from './translating';

export function routeTranslator(endpoint: Endpoint, provider: ProviderConfig, translate: boolean, references?: ResponseReferences): RouteTranslator | null {
  if (speaksNatively(provider, endpoint)) return PASSTHROUGH;
  return translate ? translating(translatorFor(endpoint, wireOf(provider).family), references) : null;
}
