-- Sign-in through an identity provider: the provider's subject id an account was first
-- signed in with, so later sign-ins find it by that id whatever its email becomes, and
-- no other identity can take it over.
ALTER TABLE users ADD COLUMN oidc_subject TEXT;
CREATE UNIQUE INDEX users_oidc_subject ON users (oidc_subject) WHERE oidc_subject IS NOT NULL;
