"""The web chat page at / in headless Chromium (Debian's chromium + chromium-driver, driven by
selenium): type a question, wait for the streamed answer and check it is the server's answer to the
same conversation, keep the conversation for a second turn, stop a long reply, show a Harmony model's
reasoning in its collapsible section. Screenshots go to TS_ARTIFACTS."""
import os
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from harness import ARTIFACTS, MODELS, SANITIZED, Server, client

TOKENS = 8 if SANITIZED else 16


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1100,800"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


class Page:
    def __init__(self, driver, url):
        self.d = driver
        self.d.get(url)
        WebDriverWait(self.d, 30).until(lambda d: d.find_element(By.ID, "model").text not in ("", "connecting…"))

    def set(self, element_id, value):
        e = self.d.find_element(By.ID, element_id)
        e.clear()
        e.send_keys(str(value))

    def ask(self, text):
        before = len(self.replies())
        self.set("input", text)
        self.d.find_element(By.ID, "send").click()
        WebDriverWait(self.d, 30).until(lambda d: len(self.replies()) == before + 1)
        return self.replies()[-1]

    def wait_done(self, reply, timeout=300):
        WebDriverWait(self.d, timeout).until(lambda d: reply.get_attribute("data-state") == "done")

    def replies(self):
        return self.d.find_elements(By.CSS_SELECTOR, ".message.assistant")

    def screenshot(self, name):
        os.makedirs(ARTIFACTS, exist_ok=True)
        path = os.path.join(ARTIFACTS, name)
        self.d.save_screenshot(path)
        print(f"\nscreenshot: {path}")


class WebChat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()

    def test_chat_stop_and_conversation(self):
        with Server("--parallel", "2") as s:
            api = client(s)
            model = api.models.list().data[0].id
            page = Page(self.driver, s.url)
            self.assertEqual(self.driver.find_element(By.ID, "model").text, model)
            page.set("system", "You are a geography teacher.")
            page.set("temperature", 0)
            page.set("max-tokens", TOKENS)
            messages = [{"role": "system", "content": "You are a geography teacher."},
                        {"role": "user", "content": "Name three rivers."}]
            reply = page.ask("Name three rivers.")
            page.wait_done(reply)
            expected = api.chat.completions.create(model=model, messages=messages, temperature=0, max_tokens=TOKENS)
            answer = reply.find_element(By.CLASS_NAME, "content").text
            self.assertEqual(answer, expected.choices[0].message.content.strip())
            stats = reply.find_element(By.CLASS_NAME, "stats").text
            self.assertIn(f"{TOKENS} tokens", stats)
            self.assertIn("tok/s", stats)
            self.assertGreater(float(reply.get_attribute("data-tok-per-sec")), 0)

            # The second turn is sent with the whole conversation.
            messages += [{"role": "assistant", "content": expected.choices[0].message.content},
                         {"role": "user", "content": "Which is the longest?"}]
            second = page.ask("Which is the longest?")
            page.wait_done(second)
            expected2 = api.chat.completions.create(model=model, messages=messages, temperature=0, max_tokens=TOKENS)
            self.assertEqual(second.find_element(By.CLASS_NAME, "content").text, expected2.choices[0].message.content.strip())
            page.screenshot("webchat.png")

            # Stop a long reply: the page ends it and the server cancels the request.
            page.set("max-tokens", 3000)
            long_reply = page.ask("Write a long story about a dragon.")  # greedily, it never ends
            WebDriverWait(self.driver, 120).until(lambda d: len(long_reply.find_element(By.CLASS_NAME, "content").text) > 10)
            self.driver.find_element(By.ID, "stop").click()
            page.wait_done(long_reply, 30)
            self.assertIn("stopped", long_reply.find_element(By.CLASS_NAME, "stats").text)
            s.wait_metric("turbospark_requests_cancelled_total", lambda v: v >= 1)
            s.wait_metric("turbospark_active_sequences", lambda v: v == 0)
            self.assertTrue(self.driver.find_element(By.ID, "send").is_enabled())

    def test_reasoning_section(self):
        with Server("-m", os.path.join(MODELS, "gpt-oss-scripted.gguf")) as s:
            page = Page(self.driver, s.url)
            page.set("temperature", 0)
            page.set("max-tokens", 50)
            reply = page.ask("What is the weather in Paris?")
            page.wait_done(reply, 60)
            self.assertEqual(reply.find_element(By.CLASS_NAME, "content").text, "Hello there")
            details = reply.find_element(By.CSS_SELECTOR, "details.reasoning")
            self.assertTrue(details.is_displayed())
            self.assertIsNone(details.get_attribute("open"))  # collapsed until clicked
            details.find_element(By.TAG_NAME, "summary").click()
            self.assertEqual(details.find_element(By.CLASS_NAME, "reasoning-text").text, "Sunny skies")
            page.screenshot("webchat-reasoning.png")


if __name__ == "__main__":
    unittest.main()
