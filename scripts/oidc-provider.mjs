// The OpenID provider of the single sign-on tests: npm's oidc-provider (installed by
// scripts/oidc-provider.sh) on 127.0.0.1 at a port of the system's choosing, with one test
// client and the accounts the test names, whose ID tokens carry their groups. Its development
// login page takes any password. Prints `issuer URL` once it listens; ends when stdin closes.
//
// Environment: OIDC_PROVIDER_DIR (the install folder), OIDC_CLIENT_ID, OIDC_CLIENT_SECRET,
// OIDC_REDIRECT_URI, OIDC_ACCOUNTS (JSON: {"LOGIN": {"email": ..., "name": ..., "groups": [...]}}).
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const need = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const dir = need('OIDC_PROVIDER_DIR');
const { default: Provider } = await import(
  pathToFileURL(path.join(dir, 'node_modules/oidc-provider/lib/index.js')).href
);
const accounts = JSON.parse(need('OIDC_ACCOUNTS'));

const server = http.createServer();
await new Promise((done) => server.listen(0, '127.0.0.1', done));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: need('OIDC_CLIENT_ID'),
      client_secret: need('OIDC_CLIENT_SECRET'),
      redirect_uris: [need('OIDC_REDIRECT_URI')],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  // Every scope's claims go in the ID token too, as the gateway reads groups from it.
  conformIdTokenClaims: false,
  claims: { openid: ['sub'], email: ['email'], profile: ['name'], groups: ['groups'] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  cookies: { keys: ['switchyard-test-cookie-key'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: account.email, name: account.name, groups: account.groups };
      },
    };
  },
});
// The development pages warn on every start; the test reads only the issuer line.
provider.on('server_error', (_ctx, err) => console.error('oidc-provider error:', err));
server.on('request', provider.callback());
console.log(`issuer ${issuer}`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
