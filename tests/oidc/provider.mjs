// A real OpenID provider for verdict's sign-in tests: oidc-provider (a certified
// implementation) on 127.0.0.1, with the clients and people a test gives it.
//
//   node tests/oidc/provider.mjs CONFIG.json
//
// CONFIG names the port, the clients ({client_id, client_secret, redirect_uris}) and the
// accounts (id -> claims: email, email_verified, groups, ...). The provider prints
// `listening on http://127.0.0.1:PORT` once it serves.
//
// People sign in on oidc-provider's own sign-in form (its development interactions: a
// form with a `login` field, any account id of CONFIG); consent is taken as given, as a
// company's provider does for its own applications.
//
// Two clients may ask for a fault a real provider does not make on demand, for the tests
// of what verdict refuses: `fault: "wrong_audience"` re-signs each ID token this client is
// given, with the provider's own key, for another audience; `fault: "expired"` re-signs it
// as expired an hour ago. Everything else is the provider's own behaviour.

import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = `http://127.0.0.1:${config.port}`;

const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await jose.exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };

const faults = new Map(
  config.clients.filter((c) => c.fault).map((c) => [c.client_id, c.fault]),
);

const provider = new Provider(issuer, {
  clients: config.clients.map(({ fault, ...client }) => ({
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...client,
  })),
  jwks: { keys: [signingKey] },
  cookies: { keys: ['verdict-test-provider-cookie-key'] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  // Claims asked for by scope go in the ID token, as most companies' providers do.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
  async findAccount(ctx, id) {
    const claims = config.accounts[id];
    if (!claims) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...claims }) };
  },
  async loadExistingGrant(ctx) {
    const known = ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (known) return ctx.oidc.provider.Grant.find(known);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
  ttl: { Session: 600, Interaction: 600, Grant: 600, AuthorizationCode: 60, AccessToken: 600, IdToken: 600 },
});
provider.proxy = false;

// The two faults: the token endpoint's answer is read and its ID token re-signed.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path !== '/token' || ctx.status !== 200 || !ctx.body?.id_token) return;
  const claims = jose.decodeJwt(ctx.body.id_token);
  const fault = faults.get([].concat(claims.aud)[0]);
  if (!fault) return;
  const now = Math.floor(Date.now() / 1000);
  const changed = fault === 'wrong_audience'
    ? { ...claims, aud: 'some-other-application' }
    : { ...claims, iat: now - 7200, exp: now - 3600 };
  ctx.body = {
    ...ctx.body,
    id_token: await new jose.SignJWT(changed)
      .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
      .sign(privateKey),
  };
});

provider.listen(config.port, '127.0.0.1', () => {
  console.log(`listening on ${issuer}`);
});
