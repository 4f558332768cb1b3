package lockd;

import java.util.List;

/** One reply: its line, and the lines before END of a multi-line reply. */
record Reply(String line, List<String> lines) {
    String[] words() {
        return line.trim().split("[ \t]+");
    }
}
