// SPDX-License-Identifier: MIT
// The console served over TLS for real (--tls-cert/--tls-key: cpp-httplib's SSLServer): a
// certificate made here by OpenSSL for 127.0.0.1, a client that verifies it, the session
// cookie marked Secure, and plain HTTP to the TLS port answered with nothing.

#include <doctest/doctest.h>

#include <httplib.h>

// Built where cpp-httplib has TLS (Debian's does) and OpenSSL is 3 (EVP_EC_gen).
#if defined(CPPHTTPLIB_OPENSSL_SUPPORT)
#include <openssl/opensslv.h>
#if OPENSSL_VERSION_MAJOR >= 3
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "trellis/agent/memory_store.hpp"
#include "trellis/web/console.hpp"

namespace ag = trellis::agent;
namespace web = trellis::web;
namespace fs = std::filesystem;

namespace {

/// A self-signed certificate for IP 127.0.0.1 (P-256, one hour) and its key, as PEM files.
struct Certificate {
  fs::path dir, cert, key;
  explicit Certificate(const std::string& name) {
    dir = fs::temp_directory_path() / ("trellis-tls-" + name + "-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    cert = dir / "cert.pem";
    key = dir / "key.pem";
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey(EVP_EC_gen("P-256"), EVP_PKEY_free);
    REQUIRE(pkey);
    std::unique_ptr<X509, decltype(&X509_free)> x(X509_new(), X509_free);
    REQUIRE(x);
    X509_set_version(x.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x.get()), 1);
    X509_gmtime_adj(X509_getm_notBefore(x.get()), -60);
    X509_gmtime_adj(X509_getm_notAfter(x.get()), 3600);
    X509_set_pubkey(x.get(), pkey.get());
    X509_NAME* subject = X509_get_subject_name(x.get());
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
    X509_set_issuer_name(x.get(), subject);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x.get(), x.get(), nullptr, nullptr, 0);
    for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1"},
                                     std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      REQUIRE(ext);
      X509_add_ext(x.get(), ext, -1);
      X509_EXTENSION_free(ext);
    }
    REQUIRE(X509_sign(x.get(), pkey.get(), EVP_sha256()) > 0);
    FILE* f = std::fopen(cert.c_str(), "w");
    REQUIRE(f);
    PEM_write_X509(f, x.get());
    std::fclose(f);
    f = std::fopen(key.c_str(), "w");
    REQUIRE(f);
    PEM_write_PrivateKey(f, pkey.get(), nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
  }
  ~Certificate() { fs::remove_all(dir); }
};

/// Stops the console when the test ends, passed or not (its serving thread then joins).
struct Stopper {
  web::Console& console;
  ~Stopper() { console.stop(); }
};

}  // namespace

TEST_CASE("console over TLS: a verified certificate, a Secure session cookie, no plain HTTP") {
  const Certificate tls("server");
  const Certificate other("other");  // valid, but not the server's
  ag::MemoryStore store;
  web::Console console(
      store,
      {.port = 0, .tls_cert = tls.cert.string(), .tls_key = tls.key.string(), .user = "ana"});
  std::jthread thread([&] { console.serve(); });
  const Stopper stopper{console};
  const std::string url = console.login_url();
  CHECK(url.rfind("https://127.0.0.1:", 0) == 0);
  const std::string token = url.substr(url.find("token=") + 6);

  // The client trusts this certificate only, and checks it names 127.0.0.1.
  httplib::SSLClient c("127.0.0.1", console.port());
  c.set_ca_cert_path(tls.cert.c_str());
  c.enable_server_certificate_verification(true);
  c.set_connection_timeout(5);
  c.set_read_timeout(10);
  auto res = c.Post("/login", "token=" + token, "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 303);
  const std::string cookie = res->get_header_value("Set-Cookie");
  CHECK(cookie.find("; Secure") != std::string::npos);
  CHECK(cookie.find("HttpOnly") != std::string::npos);
  res = c.Get("/runs", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body.find("<h1>Runs</h1>") != std::string::npos);

  // A client that trusts another certificate refuses this server's: it is really the one
  // given that is served, and verified.
  httplib::SSLClient untrusting("127.0.0.1", console.port());
  untrusting.enable_server_certificate_verification(true);
  untrusting.set_ca_cert_path(other.cert.c_str());
  untrusting.set_connection_timeout(5);
  const auto refused = untrusting.Get("/login");
  CHECK_FALSE(refused);
  CHECK(refused.error() == httplib::Error::SSLServerVerification);

  // Plain HTTP to the TLS port: no HTTP answer.
  httplib::Client plain("127.0.0.1", console.port());
  plain.set_connection_timeout(5);
  plain.set_read_timeout(5);
  const auto clear = plain.Get("/login");
  CHECK((!clear || clear->status >= 400));
}

#endif
#endif
