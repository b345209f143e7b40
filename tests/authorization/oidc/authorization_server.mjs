// An authorization server for the MCP authorization tests: oidc-provider (pinned in package.json), on loopback.
//
//   node authorization_server.mjs PORT RESOURCE
//
// Issuer http://127.0.0.1:PORT. Clients register themselves (RFC 7591) and sign in with the authorization code
// grant and PKCE; the login page is oidc-provider's development one (any login name is the subject, any password).
// Access tokens are JWTs for RESOURCE only (RFC 8707 resource indicators), with the mail.* scopes the client asked
// for, granted without a consent page. Says "listening" on stdout once it serves.
import Provider, { errors } from 'oidc-provider';

const [port, resource] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const MAIL_SCOPES = ['mail.read', 'mail.change', 'mail.send', 'mail.webhooks'];

const provider = new Provider(issuer, {
  scopes: ['openid', 'offline_access', ...MAIL_SCOPES],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, indicator) {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope: MAIL_SCOPES.join(' '), audience: resource, accessTokenFormat: 'jwt', accessTokenTTL: 300 };
      },
    },
  },
  async findAccount(ctx, id) {
    return { accountId: id, async claims() { return { sub: id }; } };
  },
  async loadExistingGrant(ctx) {
    const { client, session, params } = ctx.oidc;
    const known = ctx.oidc.result?.consent?.grantId || session.grantIdFor(client.clientId);
    if (known) return ctx.oidc.provider.Grant.find(known);
    const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
    const asked = String(params.scope || '').split(' ');
    grant.addOIDCScope(asked.filter((s) => ['openid', 'offline_access'].includes(s)).join(' ') || 'openid');
    grant.addResourceScope(resource, asked.filter((s) => MAIL_SCOPES.includes(s)).join(' '));
    await grant.save();
    return grant;
  },
});

provider.listen(Number(port), '127.0.0.1', () => console.log('listening'));
