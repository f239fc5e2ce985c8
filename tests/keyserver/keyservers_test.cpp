// Keyserver URIs and each remote's ordered list, as Apptainer's `keyserver add --order`
// and `keyserver remove` keep it, and which keyservers an operation asks.
#include "keyserver/keyservers.hpp"

#include <gtest/gtest.h>

#include "keyserver/keyserver_uri.hpp"
#include "util/error.hpp"

namespace capsa::keyserver {
namespace {

std::vector<std::string> uris(const library::Remote& remote) {
  std::vector<std::string> out;
  for (const auto& k : keyservers_of(remote)) out.push_back(k.uri + (k.skip ? " (skipped)" : ""));
  return out;
}

TEST(KeyserverUri, SchemesAreNormalizedAsApptainerDoes) {
  EXPECT_EQ(normalize_keyserver_uri("hkp://keys.example.org"), "http://keys.example.org:11371");
  EXPECT_EQ(normalize_keyserver_uri("hkp://keys.example.org:8080/"), "http://keys.example.org:8080");
  EXPECT_EQ(normalize_keyserver_uri("hkps://keys.example.org"), "https://keys.example.org");
  EXPECT_EQ(normalize_keyserver_uri("https://keys.example.org:443"), "https://keys.example.org");
  EXPECT_EQ(normalize_keyserver_uri("http://127.0.0.1:11380"), "http://127.0.0.1:11380");
  EXPECT_TRUE(same_keyserver("hkps://keys.example.org", "https://keys.example.org/"));
  EXPECT_FALSE(same_keyserver("http://keys.example.org", "https://keys.example.org"));
  for (const char* bad : {"keys.example.org", "ftp://keys.example.org", "http://", "hkp//x", "http://u:p@k.org",
                          "http://k.org/?q=1", ""}) {
    try {
      normalize_keyserver_uri(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not valid"), std::string::npos) << e.what();
    }
  }
}

TEST(Keyservers, OrderPutsANewOnePrimaryAndTheDefaultIsSkippedNotRemoved) {
  library::Remote remote;
  EXPECT_EQ(uris(remote), (std::vector<std::string>{kDefaultKeyserver}));
  add_keyserver(remote, "http://a.example:1", 0, false);
  add_keyserver(remote, "http://b.example:1", 1, true);
  EXPECT_EQ(uris(remote), (std::vector<std::string>{"http://b.example:1", kDefaultKeyserver, "http://a.example:1"}));
  EXPECT_TRUE(remote.keyservers[0].insecure);
  EXPECT_TRUE(remote.keyservers[0].external);
  EXPECT_THROW(add_keyserver(remote, "http://a.example:1", 0, false), Error);  // already there
  EXPECT_THROW(add_keyserver(remote, "http://c.example:1", 5, false), Error);  // past the end (4)
  remove_keyserver(remote, kDefaultKeyserver);
  EXPECT_EQ(uris(remote), (std::vector<std::string>{"http://b.example:1", std::string(kDefaultKeyserver) + " (skipped)",
                                                    "http://a.example:1"}));
  EXPECT_THROW(remove_keyserver(remote, kDefaultKeyserver), Error);  // not configured any more
  remove_keyserver(remote, "http://b.example:1");
  EXPECT_THROW(remove_keyserver(remote, "http://a.example:1"), Error);  // the only one left
  add_keyserver(remote, kDefaultKeyserver, 1, false);                   // the default comes back
  EXPECT_EQ(uris(remote), (std::vector<std::string>{kDefaultKeyserver, "http://a.example:1"}));
  EXPECT_FALSE(remote.keyservers[0].external);
}

TEST(Keyservers, VerifyAsksEveryKeyserverOthersThePrimaryWithTheirLogin) {
  library::RemoteFile user;
  library::Remote remote;
  add_keyserver(remote, "hkp://a.example", 1, false);
  add_keyserver(remote, "https://b.example", 0, true);
  user.remotes["lib"] = remote;
  user.active = "lib";
  user.credentials.push_back({"https://b.example/", "Bearer secret", true});
  const library::Remotes remotes(user, {});
  const auto pull = targets_for(remotes, std::nullopt, Operation::kPull, nullptr);
  ASSERT_EQ(pull.size(), 1u);
  EXPECT_EQ(pull[0].url, "http://a.example:11371");
  EXPECT_EQ(pull[0].authorization, "");
  const auto verify = targets_for(remotes, std::nullopt, Operation::kVerify, nullptr);
  ASSERT_EQ(verify.size(), 3u);
  EXPECT_EQ(verify[2].url, "https://b.example");
  EXPECT_EQ(verify[2].authorization, "Bearer secret");
  EXPECT_TRUE(verify[2].insecure);
  const auto flag = targets_for(remotes, std::string("https://b.example"), Operation::kSearch, nullptr);
  ASSERT_EQ(flag.size(), 1u);
  EXPECT_EQ(flag[0].authorization, "Bearer secret");
}

TEST(Keyservers, WithoutARemoteVerifyAsksNoneAndTheOthersTheDefault) {
  const library::Remotes none({}, {});
  EXPECT_TRUE(targets_for(none, std::nullopt, Operation::kVerify, nullptr).empty());
  std::string warning;
  const auto search = targets_for(none, std::nullopt, Operation::kSearch, &warning);
  ASSERT_EQ(search.size(), 1u);
  EXPECT_EQ(search[0].url, kDefaultKeyserver);
  EXPECT_NE(warning.find("falling back to default keyserver"), std::string::npos);
}

TEST(Keyservers, AnExclusiveSystemRemoteAllowsOnlyItsKeyservers) {
  library::RemoteFile system;
  library::Remote remote;
  remote.exclusive = true;
  add_keyserver(remote, "https://site.example", 1, false);
  system.remotes["site"] = remote;
  system.active = "site";
  const library::Remotes remotes({}, system);
  EXPECT_THROW(targets_for(remotes, std::string("https://elsewhere.example"), Operation::kPull, nullptr), Error);
  EXPECT_EQ(targets_for(remotes, std::string("hkps://site.example"), Operation::kPull, nullptr).size(), 1u);
}

}  // namespace
}  // namespace capsa::keyserver
