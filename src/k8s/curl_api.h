#pragma once

#include <curl/curl.h>

#include "base/status.h"

namespace tocsin::k8s {

// The libcurl entry points the API client calls, resolved with dlopen("libcurl.so.4") on first
// use. libcurl brings OpenSSL, GnuTLS, Kerberos and LDAP with it (about 5 MiB of RSS once
// loaded): commands that never talk to an API server, and `tocsin agent --no-kube`, never load
// it.
struct CurlApi {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  char* (*easy_escape)(CURL*, const char*, int);
  void (*free)(void*);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// Loads libcurl once (thread-safe) and calls curl_global_init. Unavailable, naming the library
// and the missing symbol, when it cannot.
Result<const CurlApi*> LoadCurl();

}  // namespace tocsin::k8s
