// SCIF apps end to end: a definition with two apps built (as root, and unprivileged with
// --fakeroot semantics), its /scif layout compared with what Apptainer's
// internal/pkg/build/apps/apps.go writes (names, modes, contents), and every --app
// behaviour checked from inside the container: run, exec, shell, test, run-help and
// inspect.
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "build_fixture.hpp"

namespace capsa::build {
namespace {

class ScifApps : public Build {
 protected:
  std::string sif = work / "apps.sif";

  void SetUp() override {
    Build::SetUp();
    std::string tool = work.write("tool.sh", "#!/bin/sh\necho tool from appfiles\n");
    ::chmod(tool.c_str(), 0755);
    std::string recipe =
        def("apps.def",
            "Bootstrap: docker\n"
            "From: " +
                registry("public/busybox:1.0") +
                "\n"
                "\n"
                "%post\n"
                "    echo post-ran > /post-ran\n"
                "%appinstall hello\n"
                "    echo \"installed in $PWD as $SCIF_APPNAME\" > installed.txt\n"
                "    printf '#!/bin/sh\\necho hello-bin\\n' > bin/hello-tool\n"
                "    chmod 755 bin/hello-tool\n"
                "%apprun hello\n"
                "    echo \"hello runs with $*\"\n"
                "    echo \"$SCIF_APPNAME $SCIF_APPROOT $SCIF_APPMETA $SCIF_APPDATA $SCIF_APPINPUT $SCIF_APPOUTPUT\"\n"
                "%appenv hello\n"
                "    export HELLO_ENV=from-appenv\n"
                "%applabels hello\n"
                "    Maintainer hello-team\n"
                "%apphelp hello\n"
                "    Hello helps.\n"
                "%apptest hello\n"
                "    echo hello-test-ran \"$@\"\n"
                "%appfiles hello\n"
                "    " +
                tool +
                " bin/tool.sh\n"
                "%apprun world\n"
                "    echo world runs\n");
    auto built = capsa({"build", sif, recipe});
    ASSERT_EQ(built.exit_code, 0) << built.err;
    EXPECT_TRUE(leftovers().empty());
  }
};

TEST_F(ScifApps, LayoutIsApptainers) {
  std::string listing = squashfs_listing(sif, work);
  auto mode_of = [&](const std::string& path) {
    std::istringstream in(listing);
    for (std::string line; std::getline(in, line);)
      if (line.size() > path.size() && line.ends_with(" " + path)) return line.substr(0, line.find(' '));
    return std::string("(absent)");
  };
  for (const char* dir : {"/scif/apps/hello", "/scif/apps/hello/bin", "/scif/apps/hello/lib", "/scif/apps/hello/scif",
                          "/scif/apps/hello/scif/env", "/scif/data/hello/input", "/scif/data/hello/output",
                          "/scif/apps/world/bin", "/scif/data/world/output"})
    EXPECT_EQ(mode_of(dir), "drwxr-xr-x") << dir << "\n" << listing;
  for (const char* script :
       {"/scif/apps/hello/scif/runscript", "/scif/apps/hello/scif/test", "/scif/apps/hello/scif/env/01-base.sh",
        "/scif/apps/hello/scif/env/90-environment.sh", "/scif/apps/world/scif/runscript",
        "/.singularity.d/env/94-appsbase.sh", "/scif/apps/hello/bin/tool.sh", "/scif/apps/hello/bin/hello-tool"})
    EXPECT_EQ(mode_of(script), "-rwxr-xr-x") << script << "\n" << listing;
  for (const char* file : {"/scif/apps/hello/scif/labels.json", "/scif/apps/hello/scif/runscript.help",
                           "/scif/apps/world/scif/labels.json"})
    EXPECT_EQ(mode_of(file), "-rw-r--r--") << file << "\n" << listing;
  // Only what the definition has: world has no %apptest, %appenv or %apphelp.
  for (const char* absent : {"/scif/apps/world/scif/test", "/scif/apps/world/scif/env/90-environment.sh",
                             "/scif/apps/world/scif/runscript.help"})
    EXPECT_EQ(mode_of(absent), "(absent)") << absent;
  // The build's root owns it all, also when the build was unprivileged.
  EXPECT_EQ(owner_of(listing, "/scif/apps/hello/installed.txt"), "0/0") << listing;
  EXPECT_EQ(owner_of(listing, "/scif/apps/hello/scif/labels.json"), "0/0") << listing;

  auto files = capsa({"exec", sif, "cat", "/scif/apps/hello/scif/runscript", "/scif/apps/hello/scif/env/01-base.sh",
                      "/scif/apps/hello/scif/labels.json", "/scif/apps/hello/installed.txt", "/post-ran"});
  EXPECT_EQ(files.out,
            "#!/bin/sh\n\n"
            "    echo \"hello runs with $*\"\n"
            "    echo \"$SCIF_APPNAME $SCIF_APPROOT $SCIF_APPMETA $SCIF_APPDATA $SCIF_APPINPUT $SCIF_APPOUTPUT\"\n\n"
            "#!/bin/sh\n\n"
            "SCIF_APPNAME=hello\n"
            "SCIF_APPROOT=\"/scif/apps/hello\"\n"
            "SCIF_APPMETA=\"/scif/apps/hello/scif\"\n"
            "SCIF_DATA=\"/scif/data\"\n"
            "SCIF_APPDATA=\"/scif/data/hello\"\n"
            "SCIF_APPINPUT=\"/scif/data/hello/input\"\n"
            "SCIF_APPOUTPUT=\"/scif/data/hello/output\"\n"
            "export SCIF_APPDATA SCIF_APPNAME SCIF_APPROOT SCIF_APPMETA SCIF_APPINPUT SCIF_APPOUTPUT SCIF_DATA\n"
            "{\n\t\"Maintainer\": \"hello-team\",\n\t\"SCIF_APP_NAME\": \"hello\"\n}"
            "installed in /scif/apps/hello as hello\n"  // %appinstall ran after %post, in the app's root
            "post-ran\n")
      << files.err;
  auto base = capsa({"exec", sif, "cat", "/.singularity.d/env/94-appsbase.sh"});
  EXPECT_NE(base.out.find("## App Global Exports For: world\n\t\nSCIF_APPDATA_world=/scif/data/world\n"
                          "SCIF_APPMETA_world=/scif/apps/world/scif\nSCIF_APPROOT_world=/scif/apps/world\n"
                          "SCIF_APPBIN_world=/scif/apps/world/bin\nSCIF_APPLIB_world=/scif/apps/world/lib\n\n"
                          "export SCIF_APPDATA_world SCIF_APPMETA_world SCIF_APPROOT_world SCIF_APPBIN_world "
                          "SCIF_APPLIB_world\n"
                          "export SCIF_APPLABELS_world=\"/scif/apps/world/scif/labels.json\"\n"
                          "export SCIF_APPRUN_world=\"/scif/apps/world/scif/runscript\"\n"),
            std::string::npos)
      << base.out << base.err;
}

TEST_F(ScifApps, RunExecShellAndTestSelectTheApp) {
  auto run = capsa({"run", "--app", "hello", sif, "a", "b"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "hello runs with a b\n"
            "hello /scif/apps/hello /scif/apps/hello/scif /scif/data/hello /scif/data/hello/input "
            "/scif/data/hello/output\n")
      << run.err;
  EXPECT_EQ(capsa({"run", "--app", "world", sif}).out, "world runs\n");
  // APPTAINER_APP is --app's environment variable.
  EXPECT_EQ(capsa({"run", sif}, {"APPTAINER_APP=world"}).out, "world runs\n");

  const std::string script =
      "echo $HELLO_ENV $SCIF_APPNAME $APPTAINER_APPNAME $SINGULARITY_APPNAME; "
      "echo $SCIF_APPBIN $SCIF_APPLIB $SCIF_APPRUN $SCIF_APPENV; "
      "echo $PATH; echo $LD_LIBRARY_PATH; hello-tool; tool.sh; "
      "echo $SCIF_APPDATA_hello $SCIF_APPRUN_world";
  auto exec = capsa({"exec", "--app", "hello", sif, "sh", "-c", script});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  std::istringstream lines(exec.out);
  std::string names, app_paths, path, libraries, tool, copied, all_apps;
  std::getline(lines, names);
  std::getline(lines, app_paths);
  std::getline(lines, path);
  std::getline(lines, libraries);
  std::getline(lines, tool);
  std::getline(lines, copied);
  std::getline(lines, all_apps);
  EXPECT_EQ(names, "from-appenv hello hello hello") << exec.out << exec.err;
  EXPECT_EQ(app_paths,
            "/scif/apps/hello/bin /scif/apps/hello/lib /scif/apps/hello/scif/runscript "
            "/scif/apps/hello/scif/env/90-environment.sh");
  EXPECT_TRUE(path.starts_with("/scif/apps/hello/bin:/scif/apps/hello:")) << path;
  EXPECT_TRUE(libraries.starts_with("/scif/apps/hello/lib")) << libraries;
  EXPECT_EQ(tool, "hello-bin");
  EXPECT_EQ(copied, "tool from appfiles");
  EXPECT_EQ(all_apps, "/scif/data/hello /scif/apps/world/scif/runscript");

  // Without --app: no app is active, but every app's SCIF_*_NAME variables are there.
  auto plain = capsa({"exec", sif, "sh", "-c", "echo \"[$HELLO_ENV][$SCIF_APPNAME] $SCIF_APPROOT_world\""});
  EXPECT_EQ(plain.out, "[][] /scif/apps/world\n") << plain.err;

  auto shell = capsa({"shell", "--app", "world", sif, "-c", "echo $SCIF_APPNAME $SCIF_APPDATA"});
  EXPECT_EQ(shell.out, "world /scif/data/world\n") << shell.err;

  auto test = capsa({"test", "--app", "hello", sif, "x"});
  EXPECT_EQ(test.exit_code, 0) << test.err;
  EXPECT_EQ(test.out, "hello-test-ran x\n") << test.err;
  auto no_test = capsa({"test", "--app", "world", sif});
  EXPECT_EQ(no_test.exit_code, 1);
  EXPECT_NE(no_test.err.find("No tests for contained app: world"), std::string::npos) << no_test.err;
}

TEST_F(ScifApps, AnUnknownAppIsOneLineNamingTheApps) {
  for (const char* action : {"run", "exec", "shell", "test"}) {
    auto result = capsa({action, "--app", "nope", sif, "true"});
    EXPECT_EQ(result.exit_code, 1) << action;
    EXPECT_EQ(result.out, "") << action;
    EXPECT_EQ(result.err, "capsa: error: no SCIF app \"nope\" in " + sif + " (its apps: hello, world)\n") << action;
  }
  auto inspect = capsa({"inspect", "--app", "nope", sif});
  EXPECT_EQ(inspect.exit_code, 1);
  EXPECT_EQ(inspect.err, "capsa: error: no SCIF app \"nope\" in " + sif + " (its apps: hello, world)\n");
}

TEST_F(ScifApps, InspectAndRunHelpShowTheApps) {
  EXPECT_EQ(capsa({"inspect", "--list-apps", sif}).out, "hello\nworld\n");
  EXPECT_EQ(capsa({"inspect", "--app", "hello", sif}).out, "Maintainer: hello-team\nSCIF_APP_NAME: hello\n");
  EXPECT_EQ(capsa({"inspect", "--app", "world", "--runscript", sif}).out, "#!/bin/sh\n\n    echo world runs\n");
  EXPECT_EQ(capsa({"inspect", "--app", "hello", "--test", sif}).out, "#!/bin/sh\n\n    echo hello-test-ran \"$@\"\n");
  EXPECT_EQ(capsa({"inspect", "--app", "hello", "--environment", sif}).out,
            "=== /scif/apps/hello/scif/env/90-environment.sh ===\n    export HELLO_ENV=from-appenv\n\n");
  EXPECT_EQ(capsa({"inspect", "--app", "hello", "--helpfile", sif}).out, "    Hello helps.\n");
  EXPECT_EQ(capsa({"run-help", "--app", "hello", sif}).out, "    Hello helps.\n");
  EXPECT_EQ(capsa({"run-help", "--app", "world", sif}).out, "No help sections were defined for this image\n");
  auto json = capsa({"inspect", "--list-apps", "--json", sif});
  EXPECT_NE(json.out.find("\"apps\": {\n\t\t\t\t\"hello\": {},\n\t\t\t\t\"world\": {}\n\t\t\t}"), std::string::npos)
      << json.out;
  // --all has every app's sections, as the SIF's inspect metadata has.
  auto all = capsa({"inspect", "--all", sif});
  EXPECT_NE(all.out.find("\"helpfile\": \"    Hello helps.\""), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("\"SCIF_APP_NAME\": \"world\""), std::string::npos) << all.out;

  // The same from a sandbox made of the SIF.
  std::string sandbox = work / "apps.sandbox";
  ASSERT_EQ(capsa({"build", "--sandbox", sandbox, sif}).exit_code, 0);
  EXPECT_EQ(capsa({"inspect", "--list-apps", sandbox}).out, "hello\nworld\n");
  auto run = capsa({"run", "--app", "world", sandbox});
  EXPECT_EQ(run.out, "world runs\n") << run.err;
}

}  // namespace
}  // namespace capsa::build
