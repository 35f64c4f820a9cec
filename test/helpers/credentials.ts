import { ALL_PERMISSIONS, keyIdentity } from '../../src/auth/permissions.js';
import type { Credential } from '../../src/backends/backend.js';

/** What the authenticator makes of a client's key that may do everything: for tests that call a backend directly. */
export const clientCredential = (key: string): Credential => ({ authorization: key, identity: keyIdentity(key, ALL_PERMISSIONS) });
