package lockd;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Set;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The jar and the pom (issue 29, item 4): the jar names its module
 * (Automatic-Module-Name, the same in build.sh and pom.xml), and pom.xml
 * runs the tests instead of skipping them. Maven itself cannot run here
 * (no Maven Central), so the pom is checked by reading it.
 */
class PackagingTest {
    static final String MODULE = "lockd";

    /** The jar build.sh made (run-tests.sh passes it): an automatic module named lockd, holding package lockd. */
    @Test
    void jarNamesItsModule() throws Exception {
        String jar = System.getProperty("lockd.jar");
        Assumptions.assumeTrue(jar != null && Files.exists(Paths.get(jar)),
                "no jar given (-Dlockd.jar; Maven runs the tests before it packages)");
        try (JarFile j = new JarFile(jar)) {
            assertEquals(MODULE, j.getManifest().getMainAttributes().getValue("Automatic-Module-Name"));
        }
        Set<ModuleReference> mods = ModuleFinder.of(Paths.get(jar)).findAll();
        assertEquals(1, mods.size());
        ModuleDescriptor d = mods.iterator().next().descriptor();
        assertEquals(MODULE, d.name());
        assertTrue(d.isAutomatic());
        assertEquals(Set.of("lockd"), d.packages());
    }

    @Test
    void buildShNamesTheModule() throws Exception {
        Matcher m = Pattern.compile("(?m)^module=(\\S+)$").matcher(Files.readString(Paths.get("build.sh")));
        assertTrue(m.find(), "build.sh sets module=");
        assertEquals(MODULE, m.group(1));
    }

    static Element child(Element e, String name) {
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element && ((Element) n).getTagName().equals(name)) {
                return (Element) n;
            }
        }
        return null;
    }

    static String text(Element e, String... path) {
        Element x = e;
        for (String p : path) {
            x = x == null ? null : child(x, p);
        }
        return x == null ? null : x.getTextContent().trim();
    }

    static Element plugin(Document pom, String artifactId) {
        NodeList ps = pom.getElementsByTagName("plugin");
        for (int i = 0; i < ps.getLength(); i++) {
            Element p = (Element) ps.item(i);
            if (artifactId.equals(text(p, "artifactId"))) {
                return p;
            }
        }
        return null;
    }

    /**
     * pom.xml: tests not skipped; JUnit Jupiter (with its engine) as a test
     * dependency; a surefire that runs JUnit 5 natively (3.x) with the
     * testenv path; the jar's Automatic-Module-Name.
     */
    @Test
    void pomRunsTheTestsAndNamesTheModule() throws Exception {
        Path p = Paths.get("pom.xml");
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(false);
        Document pom = f.newDocumentBuilder().parse(p.toFile());
        String all = Files.readString(p);
        assertFalse(all.matches("(?s).*<(skipTests|maven\\.test\\.skip|skip)>\\s*true.*"), "pom.xml skips tests");
        assertEquals("17", text(pom.getDocumentElement(), "properties", "maven.compiler.release"));

        NodeList deps = pom.getElementsByTagName("dependency");
        boolean jupiter = false;
        for (int i = 0; i < deps.getLength(); i++) {
            Element d = (Element) deps.item(i);
            if ("org.junit.jupiter".equals(text(d, "groupId")) && "junit-jupiter".equals(text(d, "artifactId"))) {
                assertEquals("test", text(d, "scope"));
                jupiter = true;
            }
        }
        assertTrue(jupiter, "junit-jupiter (API and engine) as a test dependency");

        Element sf = plugin(pom, "maven-surefire-plugin");
        assertNotNull(sf, "surefire declared");
        assertTrue(text(sf, "version").matches("3\\..*"), "surefire 3.x runs the JUnit Platform: " + text(sf, "version"));
        assertEquals("${project.basedir}/../testenv.sh",
                text(sf, "configuration", "systemPropertyVariables", "lockd.testenv"));
        assertNull(text(sf, "configuration", "skipTests"));
        assertNull(text(sf, "configuration", "includes"), "surefire's default includes take the *Test classes");

        Element jar = plugin(pom, "maven-jar-plugin");
        assertNotNull(jar, "maven-jar-plugin declared");
        assertEquals(MODULE, text(jar, "configuration", "archive", "manifestEntries", "Automatic-Module-Name"));
    }
}
