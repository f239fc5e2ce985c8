// The strict reader of environment files (runtime/env_script.hpp): what it understands
// comes out as a shell would leave it, and everything else is refused with NeedsShell,
// never guessed. The scripts Singularity 3.8 and capsa write into images are read whole.
#include "runtime/env_script.hpp"

#include <gtest/gtest.h>

#include "image/container_scripts.hpp"
#include "runtime/environment.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime {
namespace {

EnvMap run(const std::string& text, EnvScript shell = EnvScript()) {
  shell.run(text, "test.sh");
  return shell.exported();
}

std::string refusal(const std::string& text, EnvScript shell = EnvScript()) {
  try {
    shell.run(text, "test.sh");
  } catch (const NeedsShell& needs) {
    return needs.what;
  }
  ADD_FAILURE() << "understood, but a shell is needed:\n" << text;
  return "";
}

TEST(EnvScript, AssignmentsExportAndUnset) {
  EnvScript shell;
  shell.set_exported("HOST", "h");
  EXPECT_EQ(run("export A=1\nB=2\nexport C\nC=3\nexport B\nHOST=changed; unset A\nexport D\n", shell),
            (EnvMap{{"B", "2"}, {"C", "3"}, {"HOST", "changed"}}))
      << "B and C are exported after the fact; HOST keeps its export flag; D is exported but unset";
  EXPECT_EQ(run("X=1\nunset X\nX=2\n"), EnvMap{}) << "unset drops the export flag and the value";
  EXPECT_EQ(run("export A=\"a b\" B='c d' C=x\\ y"), (EnvMap{{"A", "a b"}, {"B", "c d"}, {"C", "x y"}}));
}

TEST(EnvScript, ExpansionsSeeEarlierAssignmentsAndTheOperators) {
  EnvScript shell;
  shell.set_exported("SET", "s");
  shell.set_exported("EMPTY", "");
  EXPECT_EQ(run("local=L\nexport R=\"$local-${SET}-${EMPTY:-e}-${EMPTY-u}-${NONE:-n}-${SET:+plus}-${EMPTY+p}-${NONE+q}\"\n"
                "export S=${SET}x:$SET",
                shell),
            (EnvMap{{"EMPTY", ""}, {"R", "L-s-e--n-plus-p-"}, {"S", "sx:s"}, {"SET", "s"}}));
}

TEST(EnvScript, IfElifElseAndConditions) {
  test::TempDir root;
  ASSERT_EQ(test::run_process({"mkdir", "-p", root / "dir"}).exit_code, 0);
  root.write("file", "x");
  EnvScript shell(root.path());
  shell.set_exported("V", "yes");
  EnvMap env = run(
      "if [ -z \"$V\" ]; then export A=wrong; elif [ \"$V\" = yes ]; then export A=elif; else export A=else; fi\n"
      "if test -n \"$NONE\"\nthen\n  export B=wrong\nelse\n  export B=else\nfi\n"
      "[ -d /dir ] && export C=dir || export C=wrong\n"
      "[ -f /dir ] && export D=wrong || export D=notfile\n"
      "if [ -f /file ] && [ ! -e /missing ]; then export E=both; fi\n"
      "if [ \"$V\" != yes ]; then export F=wrong; fi\n"
      "false || true && export G=chain\n",
      shell);
  EXPECT_EQ(env["A"], "elif");
  EXPECT_EQ(env["B"], "else");
  EXPECT_EQ(env["C"], "dir");
  EXPECT_EQ(env["D"], "notfile");
  EXPECT_EQ(env["E"], "both");
  EXPECT_EQ(env.count("F"), 0u);
  EXPECT_EQ(env["G"], "chain");
}

TEST(EnvScript, BranchesNotTakenAreOnlyParsed) {
  EXPECT_EQ(run("if [ -n \"${APP:-}\" ]; then\n"
                "  echo \"app $APP\"\n  . \"/scif/apps/$APP/env.sh\"\n"
                "  for f in a b; do [ -f \"$f\" ] && . \"$f\"; done\n"
                "  exit 1\n"
                "fi\nexport DONE=1\n"),
            (EnvMap{{"DONE", "1"}}));
}

TEST(EnvScript, CommentsAndContinuedLines) {
  EXPECT_EQ(run("# comment \\\nexport A=1 # trailing\nexport B=\"x\\\ny\" \\\n  C=z\n"),
            (EnvMap{{"A", "1"}, {"B", "xy"}, {"C", "z"}}));
}

TEST(EnvScript, WhatNeedsAShellIsRefused) {
  for (const char* text : {
           "export A=$(id -u)", "export A=`id -u`", "export A=$$", "export A=$?", "export A=${#PATH}",
           "export A=${PATH%%:*}", "export A=~/x", "echo hi", ". /etc/profile", "A=1 env", "ls | wc",
           "sleep 1 &", "export A=1 > /dev/null", "case $A in x) ;; esac", "while true; do :; done",
           "for x in a; do export A=$x; done", "export A=\"unterminated", "fi", "{ export A=1; }",
           "export A=$PPID", "V='a b'\n[ -n $V ]", "[ -n $UNSET ]", "[ -n * ]", "[ a -eq b ]", "[ -n x",
           "unset -f fn", "export -p", "if true; then export A=1", "export A=${X:=default}"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(refusal(text).empty());
  }
  EXPECT_NE(refusal("\n\nexport A=$(id)\n").find("test.sh:3"), std::string::npos) << "the refusal names the line";
}

TEST(EnvScript, TheScriptsImagesCarryAreReadWhole) {
  // Singularity 3.8's (fixtures/sif/real/busybox_amd64.sif) and capsa's own.
  const std::string singularity_apps =
      "#!/bin/sh\n# comment\n\nif test -n \"${SINGULARITY_APPNAME:-}\"; then\n\n"
      "    # The active app should be exported\n    export SINGULARITY_APPNAME\n\n"
      "    if test -d \"/scif/apps/${SINGULARITY_APPNAME:-}/\"; then\n"
      "        SCIF_APPS=\"/scif/apps\"\n        export SCIF_APPROOT SCIF_APPS\n"
      "        PATH=\"/scif/apps/${SINGULARITY_APPNAME:-}:$PATH\"\n"
      "        if [ -f \"/scif/apps/${SINGULARITY_APPNAME:-}/scif/env/01-base.sh\" ]; then\n"
      "            . \"/scif/apps/${SINGULARITY_APPNAME:-}/scif/env/01-base.sh\"\n        fi\n"
      "        export PATH\n    else\n"
      "        echo \"Could not locate the container application: ${SINGULARITY_APPNAME}\"\n        exit 1\n"
      "    fi\nfi\n";
  const std::string singularity_base =
      "#!/bin/sh\nif [ -z \"$LD_LIBRARY_PATH\" ]; then\n    LD_LIBRARY_PATH=\"/.singularity.d/libs\"\nelse\n"
      "    LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH:/.singularity.d/libs\"\nfi\n\nPS1=\"Singularity> \"\n"
      "export LD_LIBRARY_PATH PS1\n";
  EnvScript shell;
  shell.set_exported("PATH", "/bin");
  try {
    shell.run(singularity_apps, "95-apps.sh");
  shell.run(singularity_base, "99-base.sh");
  shell.run(std::string(image::scripts::kEnvApps), "capsa 95-apps.sh");
  shell.run(std::string(image::scripts::kEnvFinal), "capsa 99-base.sh");
  shell.set_exported("SING_USER_DEFINED_PREPEND_PATH", "/pre");
  shell.run(std::string(image::scripts::kEnvRuntimeVars), "capsa 99-runtimevars.sh");
  } catch (const NeedsShell& needs) {
    FAIL() << needs.what;
  }
  EXPECT_EQ(shell.exported(), (EnvMap{{"LD_LIBRARY_PATH", "/.singularity.d/libs:/.singularity.d/libs"},
                                      {"PATH", "/pre:/bin"},
                                      {"PS1", "Singularity> "}}));
}

TEST(EnvScript, AnAppSelectedInCapsasScriptsNeedsTheShell) {
  test::TempDir root;
  ASSERT_EQ(test::run_process({"mkdir", "-p", root / "scif/apps/tool/scif/env"}).exit_code, 0);
  root.write("scif/apps/tool/scif/env/01-base.sh", "SCIF_APPNAME=tool\n");
  EnvScript shell(root.path());
  shell.set_exported("APPTAINER_APPNAME", "tool");
  // The app's own environment files are sourced: the shell has to read them.
  EXPECT_NE(refusal(std::string(image::scripts::kEnvApps), shell).find("the command `.`"), std::string::npos);
}

}  // namespace
}  // namespace capsa::runtime
