#ifndef ORDERSYNC_COPENSSL_SHIM_H
#define ORDERSYNC_COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// The calls below are macros (or variadic) in OpenSSL 3; Swift imports neither.

static inline int ordersync_ssl_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

// "SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER: Make it possible to retry SSL_write() with changed
// buffer location": our plaintext arrays move between calls.
static inline void ordersync_ssl_ctx_set_modes(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
}

// EVP_EC_gen is a macro over the variadic EVP_PKEY_Q_keygen.
static inline EVP_PKEY *ordersync_ec_p256_key(void) { return EVP_EC_gen("P-256"); }

static inline int ordersync_ssl_ctx_set_groups(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}
// MBSTRING_ASC is a macro expression.
static inline int ordersync_x509_name_add_text(X509_NAME *name, const char *field, const char *value) {
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_ASC, (const unsigned char *)value, -1, -1, 0);
}
#endif
